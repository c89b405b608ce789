// The state-space short convolution (ssm_ops.h): shaders/ssm_conv.comp.
#include <string>

#include "gpu/device.h"
#include "gpu/shaders.h"
#include "ops/dispatch_util.h"
#include "ops/push_constants.h"
#include "ops/ssm_ops.h"
#include "ops/ssm_view_checks.h"

namespace vkllm::ops {

void ssm_conv(Stream& s, const SsmConvArgs& a) {
    const char* op = "ssm_conv";
    detail::checked_f32(a.x, op, "x");
    detail::checked_f32(a.w, op, "the weight");
    const int64_t n_tokens = a.x.rows, channels = a.x.cols, d_conv = a.w.cols;
    detail::require(channels > 0 && d_conv >= 1 && d_conv <= kSsmMaxConv, op,
                    "needs channels > 0 and 1 <= d_conv <= " + std::to_string(kSsmMaxConv) + ", got x " +
                        detail::view_shape(a.x) + " and the weight " + detail::view_shape(a.w));
    const detail::CheckedRows xv = detail::checked_rows(a.x, n_tokens, channels, op, "x");
    detail::checked_rows(a.w, channels, d_conv, op, "the weight");
    detail::require_packed(a.w, op, "the weight");
    detail::checked_rows(a.state, channels, d_conv - 1, op, "the state");
    detail::require_packed(a.state, op, "the state");
    const bool has_bias = a.bias.buffer != nullptr, has_in = a.in_gate.buffer != nullptr,
               has_out = a.out_gate.buffer != nullptr;
    if (has_bias) detail::checked_vector(a.bias, gguf::TensorType::F32, channels, op, "the bias");
    const detail::CheckedRows yv = detail::checked_rows(a.y, n_tokens, channels, op, "y");
    const detail::CheckedRows iv =
        has_in ? detail::checked_rows(a.in_gate, n_tokens, channels, op, "the input gate") : xv;
    const detail::CheckedRows ov =
        has_out ? detail::checked_rows(a.out_gate, n_tokens, channels, op, "the output gate") : xv;
    // Each invocation reads its channel's x and gates before it writes y there; the state is
    // written as the tokens go.
    detail::require_same_or_disjoint(a.y, "y", a.x, "x", op);
    detail::require_same_or_disjoint(a.y, "y", a.in_gate, "the input gate", op);
    detail::require_same_or_disjoint(a.y, "y", a.out_gate, "the output gate", op);
    detail::require_disjoint(a.y, "y", {{&a.state, "the state"}, {&a.w, "the weight"}, {&a.bias, "the bias"}}, op);
    detail::require_disjoint(a.state, "the state",
                             {{&a.x, "x"}, {&a.w, "the weight"}, {&a.bias, "the bias"},
                              {&a.in_gate, "the input gate"}, {&a.out_gate, "the output gate"}},
                             op);
    if (n_tokens == 0) return;
    gpu::Context& ctx = s.context();
    const detail::Window xw = detail::view_window(ctx, a.x, op, "x");
    const detail::Window sw = detail::view_window(ctx, a.state, op, "state");
    const detail::Window ww = detail::view_window(ctx, a.w, op, "weight");
    const detail::Window bw = has_bias ? detail::view_window(ctx, a.bias, op, "bias") : ww;
    const detail::Window yw = detail::view_window(ctx, a.y, op, "y");
    const detail::Window bgw = has_in ? detail::view_window(ctx, a.in_gate, op, "input gate") : xw;
    const detail::Window cgw = has_out ? detail::view_window(ctx, a.out_gate, op, "output gate") : xw;
    const uint32_t wg = detail::workgroup_size(ctx, 64);
    const auto& pipeline = ctx.pipeline(gpu::ShaderId::ssm_conv, 7, sizeof(SsmConvPush), {wg});
    SsmConvPush push{};
    push.n_tokens = uint32_t(n_tokens);
    push.channels = uint32_t(channels);
    push.d_conv = uint32_t(d_conv);
    push.x_shift = xw.shift;
    push.x_stride = xv.stride;
    push.st_shift = sw.shift;
    push.w_shift = ww.shift;
    push.b_shift = has_bias ? bw.shift : 0u;
    push.y_shift = yw.shift;
    push.y_stride = yv.stride;
    push.bg_shift = has_in ? bgw.shift : 0u;
    push.bg_stride = iv.stride;
    push.cg_shift = has_out ? cgw.shift : 0u;
    push.cg_stride = ov.stride;
    push.flags = (has_bias ? 1u : 0u) | (a.silu ? 2u : 0u) | (has_in ? 4u : 0u) | (has_out ? 8u : 0u);
    const detail::Grid g = detail::grid_2d(ctx, (uint64_t(channels) + wg - 1) / wg, op);
    s.dispatch(pipeline, {xw.range, sw.range, ww.range, bw.range, yw.range, bgw.range, cgw.range}, push, g.x, g.y);
}

}  // namespace vkllm::ops
