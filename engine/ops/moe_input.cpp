// Llama 4's weighted expert input (shaders/moe_weight_input.comp).
#include <algorithm>

#include "gpu/device.h"
#include "ops/dispatch_util.h"
#include "ops/ops.h"
#include "ops/push_constants.h"

namespace vkllm::ops {

void moe_weighted_input(Stream& s, const TensorView& x, const MoeRouting& r, const TensorView& out) {
    const char* op = "moe_weighted_input";
    const uint64_t x_offset = detail::checked_f32(x, op, "x");
    const uint64_t out_offset = detail::checked_f32(out, op, "out");
    detail::require_packed(x, op, "x");
    detail::require_shape(x, r.n_tokens, x.cols, op, "x");
    detail::require_shape(out, r.n_tokens * r.top_k, x.cols, op, "out");
    detail::require_packed(out, op, "out");
    const int64_t n = x.cols;
    detail::require(r.weights && r.top_k > 0 && r.n_tokens >= 0 && n > 0, op, "needs routing weights, top_k and n > 0");
    const uint64_t pairs = uint64_t(r.n_tokens) * uint64_t(r.top_k);
    detail::require(pairs * uint64_t(n) <= 0xffffffffull, op, "too many values for one dispatch");
    if (pairs == 0) return;
    gpu::Context& ctx = s.context();
    const detail::Window xw = detail::window(ctx, *x.buffer, x_offset, uint64_t(r.n_tokens) * uint64_t(n), op, "x");
    const detail::Window ww = detail::window(ctx, *r.weights, 0, pairs, op, "weights");
    const detail::Window ow = detail::window(ctx, *out.buffer, out_offset, pairs * uint64_t(n), op, "out");
    detail::require(ww.shift == 0 && ow.shift == 0, op, "weights and out must start their buffers");
    const uint32_t threads = detail::workgroup_size(ctx, 256);
    const auto& pipeline = ctx.pipeline(gpu::ShaderId::moe_weight_input, 3, sizeof(MoeWeightInputPush), {threads});
    const MoeWeightInputPush push{uint32_t(pairs), uint32_t(n), uint32_t(r.top_k), xw.shift};
    const uint64_t groups = std::clamp<uint64_t>((pairs * uint64_t(n) + threads - 1) / threads, 1,
                                                 ctx.caps().max_workgroup_count[0]);
    s.dispatch(pipeline, {xw.range, ww.range, ow.range}, push, uint32_t(groups));
}

}  // namespace vkllm::ops
