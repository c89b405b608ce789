// Residual-stream edits (shaders/residual_edit.comp).
#include <string>

#include "gpu/device.h"
#include "ops/dispatch_util.h"
#include "ops/ops.h"
#include "ops/push_constants.h"

namespace vkllm::ops {

void residual_edit(Stream& s, const TensorView& x, const Buffer& edits, int first, int n_edits, const Buffer& state) {
    const char* op = "residual_edit";
    const uint64_t x_offset = detail::checked_f32(x, op, "x");
    detail::require_packed(x, op, "x");
    const int64_t n_tokens = x.rows, n = x.cols;
    detail::require(n > 0 && n_tokens >= 0 && first >= 0 && n_edits >= 0, op,
                    "needs n > 0 and non-negative n_tokens, first and n_edits; got n " + std::to_string(n) +
                        ", n_tokens " + std::to_string(n_tokens) + ", first " + std::to_string(first) +
                        ", n_edits " + std::to_string(n_edits));
    detail::require(uint64_t(n_tokens) * uint64_t(n) <= 0xffffffffull, op, "x has more than 2^32 values");
    if (n_tokens == 0 || n_edits == 0) return;
    const uint64_t total = uint64_t(first) + uint64_t(n_edits);
    detail::require(edits.size() >= total * sizeof(ChannelEdit), op,
                    "the edits buffer holds fewer than " + std::to_string(total) + " edits");
    gpu::Context& ctx = s.context();
    const detail::Window xw = detail::window(ctx, *x.buffer, x_offset, uint64_t(n_tokens) * uint64_t(n), op, "x");
    const detail::Window ew = detail::window(ctx, edits, 0, total * 4, op, "edits");
    const detail::Window sw = detail::window(ctx, state, 0, total * 2, op, "state");
    const uint32_t threads = detail::workgroup_size(ctx, 64);
    const auto& pipeline = ctx.pipeline(gpu::ShaderId::residual_edit, 3, sizeof(ResidualEditPush), {threads});
    ResidualEditPush push{uint32_t(n_tokens), uint32_t(n), xw.shift, uint32_t(first), uint32_t(n_edits)};
    s.dispatch(pipeline, {xw.range, ew.range, sw.range}, push, 1);
}

}  // namespace vkllm::ops
