// y = [W1; W2; W3] x for one token in one dispatch (decode's Q, K and V projections): matvec.comp
// over the rows of the stacked matrices one after another, each matrix read where it lies in its
// buffer (MatvecPush's stack_row/stack_base), y holding the first matrix's rows, then the second's,
// then the third's. Each row is summed as the matrix's own matvec sums it at the same workgroup
// shape; the stack is one launch instead of three, and one grid that fills a GPU where K and V
// alone (a few hundred rows each) would leave most of it idle.
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

// The stack as one matvec sees it: the matrices' first rows in y and byte ranges in their buffer.
struct Stack {
    std::span<const Weight* const> w;
    uint64_t n_out = 0;     // rows of all matrices
    uint64_t row_bytes = 0;
    uint64_t begin = 0;     // the byte range of the buffer that holds every matrix
    uint64_t end = 0;
};

// The stack of ws, or false where they cannot be one matvec: two or three matrices of one type
// and row length (whole blocks) in one buffer.
bool stack_of(std::span<const Weight* const> ws, Stack* out) {
    if (ws.size() < 2 || ws.size() > 3) return false;
    const Weight& first = *ws[0];
    weights::Format f;
    if (!first.buffer || !weights::gpu_format(first.type, &f) || first.n_in <= 0 || first.n_in % f.block_elems)
        return false;
    Stack s;
    s.w = ws;
    s.row_bytes = uint64_t(first.n_in) / f.block_elems * f.block_bytes;
    s.begin = first.offset;
    for (const Weight* w : ws) {
        if (w->buffer != first.buffer || w->type != first.type || w->grouped != first.grouped || w->n_in != first.n_in ||
            w->n_out <= 0)
            return false;
        s.n_out += uint64_t(w->n_out);
        s.begin = std::min(s.begin, w->offset);
        s.end = std::max(s.end, w->offset + s.row_bytes * uint64_t(w->n_out));
    }
    *out = s;
    return true;
}

// The stacked weight binding and the push constants' row-0 addresses of each matrix in it.
struct StackBinding {
    weights::Window window;
    uint32_t base[3] = {};   // byte address of each matrix's row 0 in the binding
    uint32_t first_row[3] = {};  // each matrix's first row among the stack's
};

StackBinding stack_binding(const Stack& st, const weights::Limits& lim, const char* op) {
    StackBinding b;
    b.window = weights::window(*st.w[0]->buffer, st.begin, st.end, lim, op, "stacked weights");
    uint64_t row = 0;
    for (size_t i = 0; i < st.w.size(); ++i) {
        b.base[i] = uint32_t(b.window.shift + (st.w[i]->offset - st.begin));
        b.first_row[i] = uint32_t(row);
        row += uint64_t(st.w[i]->n_out);
    }
    return b;
}

// Fills the push constants' stack fields (the first matrix's address is w_base).
void set_stack(MatvecPush& push, const StackBinding& b, size_t n) {
    push.w_base = b.base[0];
    push.stack_row1 = b.first_row[1];
    push.stack_base1 = b.base[1];
    if (n == 3) {
        push.stack_row2 = b.first_row[2];
        push.stack_base2 = b.base[2];
    }
}

// The stack of ws, checked (one type and row length in one buffer, within one binding; every
// matrix a valid weight), and its layout; ShapeError naming op otherwise.
Stack checked_stack(const gpu::Context& ctx, std::span<const Weight* const> ws, const char* op,
                    weights::Layout* layout) {
    Stack st;
    require(stack_of(ws, &st) && matvec_stack_fits(ctx, ws), op,
            "two or three matrices of one type and row length in one buffer, within one binding");
    *layout = weights::checked_layout(*ws[0], op);  // one type: one layout, aligned if every matrix is
    for (const Weight* w : ws) layout->and_aligned(weights::checked_layout(*w, op));
    return st;
}

// The checks both entry points share: y one row of the stack's rows, in its buffer.
uint64_t checked_y(const Stack& st, const TensorView& y, const char* op) {
    const uint64_t y_offset = detail::checked_f32(y, op, "y");
    require(y.rows == 1 && uint64_t(y.cols) == st.n_out, op,
            "y must be one row of the stacked matrices' " + std::to_string(st.n_out) + " outputs, got " +
                std::to_string(y.rows) + " x " + std::to_string(y.cols));
    require(y.buffer->valid() && (y_offset + st.n_out) * 4 <= y.buffer->size(), op,
            "y holds fewer than the stack's outputs after its offset");
    return y_offset;
}

}  // namespace

bool matvec_stack_fits(const gpu::Context& ctx, std::span<const Weight* const> ws) {
    Stack st;
    if (!stack_of(ws, &st)) return false;
    const weights::Limits lim = weights::limits(ctx.caps());
    const uint64_t usable = lim.max_binding - lim.align - 4;
    return st.end - st.begin <= usable && uint64_t(ws[0]->n_in) * 4 <= usable && st.n_out * 4 <= usable &&
           st.n_out <= uint64_t(lim.max_groups[0]) * lim.max_groups[1];
}

void matvec_stacked(Stream& s, std::span<const Weight* const> ws, const TensorView& x, const TensorView& y,
                    bool round_x, const MatvecNorm* norm) {
    const char* op = "matvec_stacked";
    gpu::Context& ctx = s.context();
    weights::Layout layout;
    const Stack st = checked_stack(ctx, ws, op, &layout);
    const Weight& w0 = *ws[0];
    require(!round_x || matvec_rounds_activations(w0.type), op, "round_x needs a weight type whose matvec rounds");
    const uint64_t x_offset = detail::checked_f32(x, op, "x");
    require(x.rows == 1 && x.cols == w0.n_in, op,
            "x must be one row of the weights' " + std::to_string(w0.n_in) + " inputs");
    const uint64_t y_offset = checked_y(st, y, op);
    const uint64_t n_in = uint64_t(w0.n_in);
    require(x.buffer != y.buffer || (x_offset + n_in) <= y_offset || (y_offset + st.n_out) <= x_offset, op,
            "x and y overlap in the same buffer");

    const gpu::Capabilities& caps = ctx.caps();
    const weights::Limits lim = weights::limits(caps);
    const StackBinding wb = stack_binding(st, lim, op);
    const weights::Window xw = weights::window(*x.buffer, x_offset * 4, (x_offset + n_in) * 4, lim, op, "x");
    const weights::Window yw = weights::window(*y.buffer, y_offset * 4, (y_offset + st.n_out) * 4, lim, op, "y");
    const uint32_t x_base = xw.shift / 4;
    const NormBinding nb = norm_binding(norm, n_in, xw, lim, op);
    const weights::MatvecShape mv =
        weights::matvec_shape(caps, n_in / 32, /*glu=*/false, weights::large_int8_matvec(w0.type, n_in, st.n_out),
                              w0.type == TensorType::F16 || w0.type == TensorType::BF16);
    const gpu::Pipeline& pipe =
        ctx.pipeline(weights::matvec_shader(caps, weights::MatvecOp::Matvec, w0.type, round_x), layout.format.bindings(4),
                     sizeof(MatvecPush),
                     {mv.threads, mv.rows, round_x ? 1u : 0u, /*GLU_ACT*/ 0u, norm ? 1u : 0u,
                      weights::matvec_rolled(caps), weights::matvec_trip(caps), layout.aligned_spec()});
    MatvecPush push{uint32_t(n_in), uint32_t(st.n_out), 0u, uint32_t(layout.row_bytes), x_base, yw.shift / 4, 0u,
                    x_base % 4 == 0 && n_in % 4 == 0 && nb.vec4_ok ? 1u : 0u, 0u, nb.base, nb.eps, 0u};
    set_stack(push, wb, ws.size());
    uint32_t gx = 1, gy = 1;
    grid_of((st.n_out + mv.rows - 1) / mv.rows, lim, st.n_out, op, &gx, &gy);
    weights::dispatch(s, pipe, layout.format, {wb.window.range, xw.range, yw.range, nb.range}, push, gx, gy);
}

void matvec_stacked_quantized(Stream& s, std::span<const Weight* const> ws, const QuantizedActs& x,
                              const TensorView& y) {
    const char* op = "matvec_stacked_quantized";
    gpu::Context& ctx = s.context();
    weights::Layout layout;
    const Stack st = checked_stack(ctx, ws, op, &layout);
    const Weight& w0 = *ws[0];
    check_xq(x, w0, op);
    const uint64_t y_offset = checked_y(st, y, op);
    require_apart(x, y_offset, st.n_out, *y.buffer, op);

    const gpu::Capabilities& caps = ctx.caps();
    const weights::Limits lim = weights::limits(caps);
    const uint64_t n_in = uint64_t(w0.n_in);
    const StackBinding wb = stack_binding(st, lim, op);
    const weights::Window yw = weights::window(*y.buffer, y_offset * 4, (y_offset + st.n_out) * 4, lim, op, "y");
    const XqBinding xb = xq_binding(x, lim, op);
    const weights::MatvecShape mv =
        weights::matvec_shape(caps, n_in / 32, /*glu=*/false, weights::large_int8_matvec(w0.type, n_in, st.n_out));
    const gpu::Pipeline& pipe =
        ctx.pipeline(xq_shader(caps, w0.type, weights::MatvecOp::Matvec), layout.format.bindings(4), sizeof(MatvecPush),
                     {mv.threads, mv.rows, /*ROUND_X*/ 0u, /*GLU_ACT*/ 0u, /*NORM_IN*/ 0u, weights::matvec_rolled(caps),
                      weights::matvec_trip(caps), layout.aligned_spec()});
    MatvecPush push{uint32_t(n_in), uint32_t(st.n_out), 0u, uint32_t(layout.row_bytes), xb.quants, yw.shift / 4, 0u,
                    xb.vec4 ? 1u : 0u, 0u, xb.scales, 0.0f, xb.sums};
    set_stack(push, wb, ws.size());
    uint32_t gx = 1, gy = 1;
    grid_of((st.n_out + mv.rows - 1) / mv.rows, lim, st.n_out, op, &gx, &gy);
    weights::dispatch(s, pipe, layout.format, {wb.window.range, xb.window.range, yw.range, xb.window.range}, push, gx, gy);
}

}  // namespace vkllm::ops
