// Mamba-1's selective scan (ssm_ops.h): shaders/ssm_scan_mamba1.comp.
#include <algorithm>
#include <string>

#include "gpu/device.h"
#include "gpu/shaders.h"
#include "ops/dispatch_util.h"
#include "ops/push_constants.h"
#include "ops/ssm_ops.h"
#include "ops/ssm_view_checks.h"

namespace vkllm::ops {

namespace {

using detail::view_shape;

struct Bound {
    detail::Window w;
    uint32_t stride = 0;
};

// The checked f32 view `v` of shape [rows, cols] as a binding window.
Bound bind(const gpu::Context& ctx, const TensorView& v, int64_t rows, int64_t cols, const char* op, const char* what) {
    const detail::CheckedRows r = detail::checked_rows(v, rows, cols, op, what);
    return {detail::view_window(ctx, v, op, what), r.stride};
}

}  // namespace

void ssm_scan_mamba1(Stream& s, const SsmScanMamba1Args& a) {
    const char* op = "ssm_scan_mamba1";
    detail::checked_f32(a.x, op, "x");
    detail::checked_f32(a.state, op, "state");
    const int64_t n_tokens = a.x.rows, d_inner = a.x.cols, d_state = a.state.cols;
    detail::require(d_inner > 0 && d_state > 0 && d_state <= kSsmMamba1MaxState, op,
                    "needs d_inner > 0 and 0 < d_state <= " + std::to_string(kSsmMamba1MaxState) + ", got x " +
                        view_shape(a.x) + " and state " + view_shape(a.state));
    gpu::Context& ctx = s.context();
    const Bound st = bind(ctx, a.state, d_inner, d_state, op, "state");
    detail::require(st.stride == uint32_t(d_state), op, "the state's rows must be packed");
    const Bound av = bind(ctx, a.a, d_inner, d_state, op, "A");
    detail::require(av.stride == uint32_t(d_state), op, "A's rows must be packed");
    const bool has_d = a.d.buffer != nullptr, has_z = a.z.buffer != nullptr;
    const Bound dv = has_d ? bind(ctx, a.d, 1, d_inner, op, "D") : av;
    if (n_tokens == 0) return;
    const Bound xv = bind(ctx, a.x, n_tokens, d_inner, op, "x");
    const Bound dtv = bind(ctx, a.dt, n_tokens, d_inner, op, "dt");
    const Bound yv = bind(ctx, a.y, n_tokens, d_inner, op, "y");
    const Bound zv = has_z ? bind(ctx, a.z, n_tokens, d_inner, op, "z") : xv;
    // B and C share one binding: one window over both, each at its shift.
    const uint64_t b0 = detail::checked_f32(a.b, op, "B"), c0 = detail::checked_f32(a.c, op, "C");
    detail::require(a.b.buffer == a.c.buffer && a.b.stride() == a.c.stride(), op,
                    "B and C must be views of one buffer at one row stride");
    bind(ctx, a.b, n_tokens, d_state, op, "B");
    bind(ctx, a.c, n_tokens, d_state, op, "C");
    const uint64_t lo = std::min(b0, c0), hi = std::max(b0, c0) + detail::view_span(a.b);
    const detail::Window bcw = detail::window(ctx, *a.b.buffer, lo, hi - lo, op, "B and C");
    // Each invocation reads its channel's x, dt and z before it writes y there, so y may be any
    // of them; every invocation reads all of B and C, and the state is written at the end.
    detail::require_disjoint(a.y, "y", {{&a.state, "the state"}, {&a.b, "B"}, {&a.c, "C"}, {&a.a, "A"}, {&a.d, "D"}},
                             op);
    const uint32_t wg = detail::workgroup_size(ctx, 64);
    const auto& pipeline = ctx.pipeline(gpu::ShaderId::ssm_scan_mamba1, 8, sizeof(SsmScanMamba1Push),
                                        {wg, uint32_t(d_state)});
    SsmScanMamba1Push push{};
    push.n_tokens = uint32_t(n_tokens);
    push.d_inner = uint32_t(d_inner);
    push.st_shift = st.w.shift;
    push.x_shift = xv.w.shift;
    push.x_stride = xv.stride;
    push.dt_shift = dtv.w.shift;
    push.dt_stride = dtv.stride;
    push.b_shift = bcw.shift + uint32_t(b0 - lo);
    push.c_shift = bcw.shift + uint32_t(c0 - lo);
    push.bc_stride = uint32_t(a.b.stride());
    push.z_shift = has_z ? zv.w.shift : 0u;
    push.z_stride = has_z ? zv.stride : 0u;
    push.a_shift = av.w.shift;
    push.d_shift = has_d ? dv.w.shift : 0u;
    push.y_shift = yv.w.shift;
    push.y_stride = yv.stride;
    push.flags = (has_d ? 1u : 0u) | (has_z ? 2u : 0u);
    const detail::Grid g = detail::grid_2d(ctx, (uint64_t(d_inner) + wg - 1) / wg, op);
    s.dispatch(pipeline, {st.w.range, xv.w.range, dtv.w.range, bcw.range, zv.w.range, av.w.range, dv.w.range, yv.w.range},
               push, g.x, g.y);
}

}  // namespace vkllm::ops
