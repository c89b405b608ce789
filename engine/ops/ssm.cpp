// State-space ops (ssm_ops.h): shaders/ssm_conv.comp, ssm_scan.comp, ssm_norm.comp.
#include <algorithm>
#include <string>

#include "gpu/device.h"
#include "gpu/shaders.h"
#include "ops/dispatch_util.h"
#include "ops/push_constants.h"
#include "ops/ssm_ops.h"

namespace vkllm::ops {

namespace {

uint32_t pow2_at_least(uint64_t n) {
    uint32_t p = 1;
    while (p < n) p <<= 1;
    return p;
}

// Floats spanned by n_rows rows of `row` values `stride` apart.
uint64_t span(int64_t n_rows, int64_t stride, int64_t row) {
    return n_rows <= 0 ? 0 : uint64_t(n_rows - 1) * uint64_t(stride) + uint64_t(row);
}

}  // namespace

void ssm_conv(Stream& s, const SsmConvArgs& a) {
    const char* op = "ssm_conv";
    detail::require(a.n_tokens >= 0 && a.channels > 0 && a.d_conv >= 1 && a.d_conv <= kSsmMaxConv, op,
                    "needs n_tokens >= 0, channels > 0 and 1 <= d_conv <= " + std::to_string(kSsmMaxConv) +
                        ", got " + std::to_string(a.n_tokens) + ", " + std::to_string(a.channels) + ", " +
                        std::to_string(a.d_conv));
    detail::require(a.x && a.state && a.w && a.y, op, "x, state, w and y are required");
    const int64_t xs = a.x_stride ? a.x_stride : a.channels, ys = a.y_stride ? a.y_stride : a.channels;
    detail::require(xs >= a.channels && ys >= a.channels, op, "row strides shorter than a row");
    if (a.n_tokens == 0) return;
    gpu::Context& ctx = s.context();
    const uint64_t ns = uint64_t(a.d_conv - 1);
    const detail::Window xw = detail::window(ctx, *a.x, a.x_offset, span(a.n_tokens, xs, a.channels), op, "x");
    const detail::Window sw = detail::window(ctx, *a.state, a.state_offset, uint64_t(a.channels) * ns, op, "state");
    const detail::Window ww = detail::window(ctx, *a.w, a.w_offset, uint64_t(a.channels * a.d_conv), op, "weight");
    const detail::Window bw = a.bias ? detail::window(ctx, *a.bias, a.bias_offset, uint64_t(a.channels), op, "bias")
                                     : ww;
    const detail::Window yw = detail::window(ctx, *a.y, a.y_offset, span(a.n_tokens, ys, a.channels), op, "y");
    const int64_t bgs = a.in_gate_stride ? a.in_gate_stride : a.channels;
    const int64_t cgs = a.out_gate_stride ? a.out_gate_stride : a.channels;
    detail::require(bgs >= a.channels && cgs >= a.channels, op, "gate row strides shorter than a row");
    const detail::Window bgw =
        a.in_gate ? detail::window(ctx, *a.in_gate, a.in_gate_offset, span(a.n_tokens, bgs, a.channels), op, "input gate")
                  : xw;
    const detail::Window cgw =
        a.out_gate ? detail::window(ctx, *a.out_gate, a.out_gate_offset, span(a.n_tokens, cgs, a.channels), op, "output gate")
                   : xw;
    const uint32_t wg = detail::workgroup_size(ctx, 64);
    const auto& pipeline = ctx.pipeline(gpu::ShaderId::ssm_conv, 7, sizeof(SsmConvPush), {wg});
    SsmConvPush push{};
    push.n_tokens = uint32_t(a.n_tokens);
    push.channels = uint32_t(a.channels);
    push.d_conv = uint32_t(a.d_conv);
    push.x_shift = xw.shift;
    push.x_stride = uint32_t(xs);
    push.st_shift = sw.shift;
    push.w_shift = ww.shift;
    push.b_shift = a.bias ? bw.shift : 0u;
    push.y_shift = yw.shift;
    push.y_stride = uint32_t(ys);
    push.bg_shift = a.in_gate ? bgw.shift : 0u;
    push.bg_stride = uint32_t(bgs);
    push.cg_shift = a.out_gate ? cgw.shift : 0u;
    push.cg_stride = uint32_t(cgs);
    push.flags = (a.bias ? 1u : 0u) | (a.silu ? 2u : 0u) | (a.in_gate ? 4u : 0u) | (a.out_gate ? 8u : 0u);
    const detail::Grid g = detail::grid_2d(ctx, (uint64_t(a.channels) + wg - 1) / wg, op);
    s.dispatch(pipeline, {xw.range, sw.range, ww.range, bw.range, yw.range, bgw.range, cgw.range}, push, g.x, g.y);
}

void ssm_scan(Stream& s, const SsmScanArgs& a) {
    const char* op = "ssm_scan";
    detail::require(a.n_tokens >= 0 && a.n_head > 0 && a.head_dim > 0 && a.d_state > 0 && a.n_group > 0, op,
                    "needs positive sizes");
    detail::require(a.n_head % a.n_group == 0, op,
                    "n_head " + std::to_string(a.n_head) + " is not a multiple of n_group " +
                        std::to_string(a.n_group));
    detail::require(a.state && a.xbc && a.zdt && a.a && a.y, op, "state, xbc, zdt, a and y are required");
    const int64_t d_inner = a.n_head * a.head_dim, gs = a.n_group * a.d_state;
    const int64_t ys = a.y_stride ? a.y_stride : d_inner;
    detail::require(a.b_col >= 0 && a.c_col >= 0 && a.xbc_stride >= d_inner && a.xbc_stride >= a.b_col + gs &&
                        a.xbc_stride >= a.c_col + gs,
                    op, "x, B and C do not fit an xbc row of " + std::to_string(a.xbc_stride));
    detail::require(a.dt_col >= 0 && a.zdt_stride >= a.dt_col + a.n_head &&
                        (a.z_col < 0 || a.zdt_stride >= a.z_col + d_inner),
                    op, "dt and z do not fit a zdt row of " + std::to_string(a.zdt_stride));
    detail::require(ys >= d_inner, op, "y's row stride is shorter than a row");
    if (a.n_tokens == 0) return;
    gpu::Context& ctx = s.context();
    const bool rows = a.kernel == SsmScanKernel::Rows ||
                      (a.kernel == SsmScanKernel::Auto && ctx.caps().type == "cpu" && a.d_state <= kSsmScanRowsMaxState);
    const uint32_t wg = rows ? detail::workgroup_size(ctx, 64)
                             : detail::workgroup_size(ctx, std::max<uint32_t>(32, std::min<uint32_t>(256, pow2_at_least(uint64_t(a.d_state)))));
    if (rows) {
        detail::require(a.d_state <= kSsmScanRowsMaxState, op,
                        "d_state " + std::to_string(a.d_state) + " is over the row kernel's " +
                            std::to_string(kSsmScanRowsMaxState));
    } else {
        detail::require(uint64_t(a.d_state) <= 4ull * wg, op,
                        "d_state " + std::to_string(a.d_state) + " exceeds 4 x the workgroup size " + std::to_string(wg));
    }
    const detail::Window sw =
        detail::window(ctx, *a.state, a.state_offset, uint64_t(d_inner) * uint64_t(a.d_state), op, "state");
    const detail::Window xw =
        detail::window(ctx, *a.xbc, a.xbc_offset, span(a.n_tokens, a.xbc_stride, std::max({d_inner, a.b_col + gs, a.c_col + gs})),
                       op, "xbc");
    const detail::Window zw =
        detail::window(ctx, *a.zdt, a.zdt_offset, span(a.n_tokens, a.zdt_stride, std::max(a.dt_col + a.n_head, a.z_col < 0 ? int64_t(0) : a.z_col + d_inner)),
                       op, "zdt");
    const detail::Window aw = detail::window(ctx, *a.a, 0, uint64_t(a.n_head), op, "A");
    const detail::Window bw = a.dt_bias ? detail::window(ctx, *a.dt_bias, 0, uint64_t(a.n_head), op, "dt_bias") : aw;
    const detail::Window dw = a.d ? detail::window(ctx, *a.d, 0, uint64_t(a.n_head), op, "D") : aw;
    const detail::Window yw = detail::window(ctx, *a.y, a.y_offset, span(a.n_tokens, ys, d_inner), op, "y");
    const gpu::SubgroupPair variants{gpu::ShaderId::ssm_scan, gpu::ShaderId::ssm_scan_sg};
    const auto& pipeline =
        rows ? ctx.pipeline(gpu::ShaderId::ssm_scan_rows, 7, sizeof(SsmScanPush), {wg, uint32_t(a.d_state)})
             : ctx.pipeline(variants.pick(ctx.caps().subgroup_arithmetic), 7, sizeof(SsmScanPush), {wg});
    SsmScanPush push{};
    push.n_tokens = uint32_t(a.n_tokens);
    push.n_head = uint32_t(a.n_head);
    push.head_dim = uint32_t(a.head_dim);
    push.d_state = uint32_t(a.d_state);
    push.heads_per_group = uint32_t(a.n_head / a.n_group);
    push.st_shift = sw.shift;
    push.xbc_shift = xw.shift;
    push.xbc_stride = uint32_t(a.xbc_stride);
    push.b_col = uint32_t(a.b_col);
    push.c_col = uint32_t(a.c_col);
    push.zdt_shift = zw.shift;
    push.zdt_stride = uint32_t(a.zdt_stride);
    push.z_col = a.z_col < 0 ? 0u : uint32_t(a.z_col);
    push.dt_col = uint32_t(a.dt_col);
    push.dtb_shift = a.dt_bias ? bw.shift : 0u;
    push.a_shift = aw.shift;
    push.d_shift = a.d ? dw.shift : 0u;
    push.y_shift = yw.shift;
    push.y_stride = uint32_t(ys);
    push.flags = (a.dt_bias ? 1u : 0u) | (a.d ? 2u : 0u) | (a.z_col >= 0 ? 4u : 0u);
    const detail::Grid g = detail::grid_2d(ctx, rows ? (uint64_t(d_inner) + wg - 1) / wg : uint64_t(d_inner), op);
    s.dispatch(pipeline, {sw.range, xw.range, zw.range, bw.range, aw.range, dw.range, yw.range}, push, g.x, g.y);
}

void ssm_group_rms_norm(Stream& s, const Buffer& x, uint64_t x_offset, const Buffer* w, const Buffer& y,
                        uint64_t y_offset, int64_t n_rows, int64_t n, int64_t n_group, float eps) {
    const char* op = "ssm_group_rms_norm";
    detail::require(n > 0 && n_group > 0 && n_rows >= 0, op, "needs n > 0, n_group > 0 and n_rows >= 0");
    detail::require(eps >= 0.0f, op, "eps must be >= 0");
    if (n_rows == 0) return;
    gpu::Context& ctx = s.context();
    const uint64_t total = uint64_t(n_rows) * uint64_t(n_group) * uint64_t(n);
    const detail::Window xw = detail::window(ctx, x, x_offset, total, op, "x");
    const detail::Window yw = detail::window(ctx, y, y_offset, total, op, "y");
    const detail::Window ww = w ? detail::window(ctx, *w, 0, uint64_t(n_group * n), op, "weight") : xw;
    const uint32_t wg = detail::workgroup_size(ctx, n >= 1024 ? 256 : 64);
    const gpu::SubgroupPair variants{gpu::ShaderId::ssm_norm, gpu::ShaderId::ssm_norm_sg};
    const auto& pipeline = ctx.pipeline(variants.pick(ctx.caps().subgroup_arithmetic), 3, sizeof(SsmNormPush), {wg});
    SsmNormPush push{uint32_t(n), uint32_t(n_group), uint32_t(n_rows * n_group), xw.shift, yw.shift,
                     w ? ww.shift : 0u, w ? 1u : 0u, eps};
    const detail::Grid g = detail::grid_2d(ctx, uint64_t(n_rows * n_group), op);
    s.dispatch(pipeline, {xw.range, ww.range, yw.range}, push, g.x, g.y);
}

}  // namespace vkllm::ops
