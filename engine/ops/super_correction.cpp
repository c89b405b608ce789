// Super-weight correction after a down projection (shaders/super_correction.comp).
#include <algorithm>
#include <string>

#include "gpu/device.h"
#include "ops/dispatch_util.h"
#include "ops/ops.h"
#include "ops/push_constants.h"

namespace vkllm::ops {

void super_correction(Stream& s, const TensorView& y, const TensorView& a, const Buffer& corrections,
                      int n_corrections) {
    const char* op = "super_correction";
    const uint64_t y_offset = detail::checked_f32(y, op, "y");
    const uint64_t a_offset = detail::checked_f32(a, op, "a");
    detail::require_packed(y, op, "y");
    detail::require_packed(a, op, "a");
    detail::require(y.rows == a.rows, op,
                    "y and a must have one row per token, got " + std::to_string(y.rows) + " and " + std::to_string(a.rows));
    const int64_t n_tokens = y.rows, n_out = y.cols, n_in = a.cols;
    detail::require(n_out > 0 && n_in > 0 && n_tokens >= 0 && n_corrections >= 0, op,
                    "needs n_out > 0, n_in > 0 and non-negative n_tokens and n_corrections; got n_out " +
                        std::to_string(n_out) + ", n_in " + std::to_string(n_in) + ", n_tokens " +
                        std::to_string(n_tokens) + ", n_corrections " + std::to_string(n_corrections));
    detail::require(uint64_t(n_tokens) * uint64_t(std::max(n_out, n_in)) <= 0xffffffffull, op,
                    "y or a has more than 2^32 values");
    if (n_tokens == 0 || n_corrections == 0) return;
    detail::require(corrections.size() >= uint64_t(n_corrections) * sizeof(SuperCorrection), op,
                    "the corrections buffer holds fewer than " + std::to_string(n_corrections) + " corrections");
    gpu::Context& ctx = s.context();
    const detail::Window yw = detail::window(ctx, *y.buffer, y_offset, uint64_t(n_tokens) * uint64_t(n_out), op, "y");
    const detail::Window aw = detail::window(ctx, *a.buffer, a_offset, uint64_t(n_tokens) * uint64_t(n_in), op, "a");
    const detail::Window cw = detail::window(ctx, corrections, 0, uint64_t(n_corrections) * 4, op, "corrections");
    const uint32_t threads = detail::workgroup_size(ctx, 64);
    const uint64_t groups = (uint64_t(n_tokens) + threads - 1) / threads;
    detail::require(groups <= ctx.caps().max_workgroup_count[0], op,
                    std::to_string(n_tokens) + " tokens need more workgroups than the device allows");
    const auto& pipeline = ctx.pipeline(gpu::ShaderId::super_correction, 3, sizeof(SuperCorrectionPush), {threads});
    SuperCorrectionPush push{uint32_t(n_tokens), uint32_t(n_out), uint32_t(n_in), yw.shift, aw.shift,
                             uint32_t(n_corrections)};
    s.dispatch(pipeline, {yw.range, aw.range, cw.range}, push, uint32_t(groups));
}

}  // namespace vkllm::ops
