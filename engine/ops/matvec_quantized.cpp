// y = W x for one token with x quantized beforehand (ops::quantize_activations): matvec.comp's
// XQ variants, which read x's int8 quants and block scales instead of floats, so x is rounded
// once per input rather than once per workgroup of every matvec that reads it.
#include <algorithm>
#include <string>

#include "gpu/device.h"
#include "ops/matvec_bindings.h"
#include "ops/ops.h"
#include "ops/push_constants.h"
#include "ops/weight_ops.h"

namespace vkllm::ops {

namespace {

using weights::require;

}  // namespace

bool matvec_reads_quantized(TensorType t) {
    weights::XqMatvecShaders sh;
    return weights::xq_matvec_shaders(t, &sh);
}

void matvec_quantized(Stream& s, const Weight& w, const QuantizedActs& x, const TensorView& y, bool accumulate) {
    const char* op = "matvec_quantized";
    const uint64_t y_offset = detail::checked_f32(y, op, "y");
    check_xq(x, w, op);
    require(y.rows == 1 && y.cols == w.n_out, op,
            "y must be one row of the weight's " + std::to_string(w.n_out) + " outputs, got " +
                std::to_string(y.rows) + " x " + std::to_string(y.cols));
    const weights::Layout layout = weights::checked_layout(w, op);
    require(y.buffer->valid() && (y_offset + uint64_t(w.n_out)) * 4 <= y.buffer->size(), op,
            "y holds fewer than n_out values after its offset");
    require_apart(x, y_offset, uint64_t(w.n_out), *y.buffer, op);

    gpu::Context& ctx = s.context();
    const gpu::Capabilities& caps = ctx.caps();
    const weights::Limits lim = weights::limits(caps);
    const uint64_t usable = lim.max_binding - lim.align - 4;
    const uint64_t n_in = uint64_t(w.n_in), n_out = uint64_t(w.n_out), row_bytes = layout.row_bytes;
    require(row_bytes <= usable, op,
            "one row of " + std::to_string(n_in) + " elements does not fit one binding (" +
                std::to_string(lim.max_binding) + " bytes)");
    const weights::MatvecShape mv =
        weights::matvec_shape(caps, n_in / 32, /*glu=*/false, weights::large_int8_matvec(w.type, n_in, n_out));
    const gpu::Pipeline& pipe =
        ctx.pipeline(xq_shader(caps, w.type, weights::MatvecOp::Matvec), layout.format.bindings(4), sizeof(MatvecPush),
                     {mv.threads, mv.rows, /*ROUND_X*/ 0u, /*GLU_ACT*/ 0u, /*NORM_IN*/ 0u, weights::matvec_rolled(caps),
                      weights::matvec_trip(caps), layout.aligned_spec()});
    const XqBinding xb = xq_binding(x, lim, op);
    // Rows per window: what one binding holds and one grid covers (matmul's rule).
    const uint64_t grid_rows = uint64_t(lim.max_groups[0]) * lim.max_groups[1] * mv.rows;
    const uint64_t rows_per_window = std::min({usable / row_bytes, usable / 4, grid_rows});
    for (uint64_t row0 = 0; row0 < n_out; row0 += rows_per_window) {
        const uint64_t rows = std::min(rows_per_window, n_out - row0);
        const weights::Window ww = weights::window(*w.buffer, w.offset + row0 * row_bytes,
                                                   w.offset + (row0 + rows) * row_bytes, lim, op, "weight");
        const weights::Window yw =
            weights::window(*y.buffer, (y_offset + row0) * 4, (y_offset + row0 + rows) * 4, lim, op, "y");
        const MatvecPush push{uint32_t(n_in), uint32_t(rows), ww.shift, uint32_t(row_bytes), xb.quants, yw.shift / 4,
                              accumulate ? 1u : 0u, xb.vec4 ? 1u : 0u, 0u, xb.scales, 0.0f, xb.sums};
        uint32_t gx = 1, gy = 1;
        grid_of((rows + mv.rows - 1) / mv.rows, lim, n_out, op, &gx, &gy);
        weights::dispatch(s, pipe, layout.format, {ww.range, xb.window.range, yw.range, xb.window.range}, push, gx, gy);
    }
}

void matvec_swiglu_quantized(Stream& s, const Weight& gate, const Weight& up, const QuantizedActs& x,
                             const TensorView& y, GluActivation act) {
    const char* op = "matvec_swiglu_quantized";
    const uint64_t y_offset = detail::checked_f32(y, op, "y");
    check_xq(x, gate, op);
    gpu::Context& ctx = s.context();
    require(matvec_swiglu_fits(ctx, gate, up), op,
            "gate and up must be one type and shape in one buffer (gate first), within one binding");
    require(y.rows == 1 && y.cols == gate.n_out, op,
            "y must be one row of the weights' " + std::to_string(gate.n_out) + " outputs");
    weights::Layout layout = weights::checked_layout(gate, op);
    layout.and_aligned(weights::checked_layout(up, op));
    const uint64_t n_in = uint64_t(gate.n_in), n_out = uint64_t(gate.n_out), row_bytes = layout.row_bytes;
    require(y.buffer->valid() && (y_offset + n_out) * 4 <= y.buffer->size(), op,
            "y holds fewer than n_out values after its offset");
    require_apart(x, y_offset, n_out, *y.buffer, op);

    const gpu::Capabilities& caps = ctx.caps();
    const weights::Limits lim = weights::limits(caps);
    const weights::Window ww =
        weights::window(*gate.buffer, gate.offset, up.offset + n_out * row_bytes, lim, op, "gate and up");
    const weights::Window yw = weights::window(*y.buffer, y_offset * 4, (y_offset + n_out) * 4, lim, op, "y");
    const XqBinding xb = xq_binding(x, lim, op);
    const weights::MatvecShape mv = weights::matvec_shape(caps, n_in / 32, /*glu=*/true);
    const gpu::Pipeline& pipe =
        ctx.pipeline(xq_shader(caps, gate.type, weights::MatvecOp::MatvecSwiglu), layout.format.bindings(4), sizeof(MatvecPush),
                     {mv.threads, mv.rows, /*ROUND_X*/ 0u, uint32_t(act), /*NORM_IN*/ 0u, weights::matvec_rolled(caps),
                      weights::matvec_trip(caps), layout.aligned_spec()});
    const MatvecPush push{uint32_t(n_in), uint32_t(n_out), ww.shift,  uint32_t(row_bytes), xb.quants, yw.shift / 4, 0u,
                          xb.vec4 ? 1u : 0u, uint32_t(up.offset - gate.offset), xb.scales, 0.0f, xb.sums};
    uint32_t gx = 1, gy = 1;
    grid_of((n_out + mv.rows - 1) / mv.rows, lim, n_out, op, &gx, &gy);
    weights::dispatch(s, pipe, layout.format, {ww.range, xb.window.range, yw.range, xb.window.range}, push, gx, gy);
}

}  // namespace vkllm::ops
