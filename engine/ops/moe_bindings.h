// Internal to the expert ops (moe.cpp, moe_matvec.cpp): the routing's checks, the bindings of
// the experts' activations (f32 rows, or rows quantized beforehand) and the windows their
// weights are split into.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ops/ops.h"
#include "ops/weight_ops.h"

namespace vkllm::ops::moe_detail {

// Throws ShapeError naming `op` for a routing without expert ids or with counts out of range.
void check_routing(const MoeRouting& r, const char* op);

// The expert ops' activation bindings: x rows per token or per pair, y rows per pair; each in
// one binding.
struct ActivationWindows {
    weights::Window x, y;
    uint32_t x_base = 0, x_vec4 = 0;  // x_vec4: x quads (or quantized x's quants) 16-byte aligned
    uint32_t x_stride = 0, y_stride = 0;  // floats between rows (x_stride 0: packed, or quantized)
    // Quantized x (moe_matvec.comp's XQ): word indices of row 0's block scales and quant sums
    // (x_base: of its quants).
    uint32_t xq_scales = 0, xq_sums = 0;
};
// x: [n_tokens or n_pairs, n_in], y: [n_pairs, n_out], f32 views; their rows packed unless
// `strided` (the matrix-vector kernel, which takes any row stride).
ActivationWindows activation_windows(const TensorView& x, bool x_per_pair, const MoeRouting& r, uint64_t n_in,
                                     uint64_t n_out, const TensorView& y, const weights::Limits& lim, const char* op,
                                     bool strided = false);
// The same with x quantized beforehand: x.rows the tokens or (x_per_pair) the pairs, x.n = n_in;
// y's rows may be strided.
ActivationWindows quantized_windows(const QuantizedActs& x, bool x_per_pair, const MoeRouting& r, uint64_t n_in,
                                    uint64_t n_out, const TensorView& y, const weights::Limits& lim, const char* op);

// The experts' bias (w.bias: f32 [n_expert, n_out]) as one window, or where w has none `y` with
// no shift: the dispatch then binds the weight window instead (read-only, so no hazard with
// the previous window's dispatch), and only the shift is read.
weights::Window expert_bias_window(const ExpertWeights& w, const weights::Window& y, const weights::Limits& lim,
                                   const char* op);

// A window of the experts' weights: experts [e0, e0 + ec), rows [r0, r0 + nr) of each.
struct ExpertWindow {
    weights::Window w;
    uint64_t e0 = 0, ec = 0, r0 = 0, nr = 0;
    uint32_t expert_stride = 0;  // bytes from one expert's rows to the next's (0 when ec == 1)
};
// Calls fn(ExpertWindow) for each window: whole experts when an expert's rows fit one binding and
// a grid of max_groups[0] x rows_per_group rows, else row ranges of one expert at a time.
template <class Fn>
void for_each_expert_window(const ExpertWeights& w, uint64_t row_bytes, const weights::Limits& lim,
                            uint64_t rows_per_group, const char* op, Fn&& fn) {
    const uint64_t usable = lim.max_binding - lim.align - 4;  // a window after its alignment slack
    const uint64_t n_out = uint64_t(w.n_out), n_expert = uint64_t(w.n_expert), expert_bytes = row_bytes * n_out;
    const uint64_t grid_rows = uint64_t(lim.max_groups[0]) * rows_per_group;
    const uint64_t rows_per_window = std::min({n_out, usable / row_bytes, grid_rows});
    const uint64_t experts_per_window =
        rows_per_window == n_out ? std::clamp<uint64_t>(usable / expert_bytes, 1, n_expert) : 1;
    for (uint64_t e0 = 0; e0 < n_expert; e0 += experts_per_window) {
        const uint64_t ec = std::min(experts_per_window, n_expert - e0);
        for (uint64_t r0 = 0; r0 < n_out; r0 += rows_per_window) {
            const uint64_t nr = std::min(rows_per_window, n_out - r0);
            const uint64_t begin = w.offset + (e0 * n_out + r0) * row_bytes;
            ExpertWindow win;
            win.w = weights::window(*w.buffer, begin, begin + (ec - 1) * expert_bytes + nr * row_bytes, lim, op,
                                    "weight");
            win.e0 = e0;
            win.ec = ec;
            win.r0 = r0;
            win.nr = nr;
            win.expert_stride = ec > 1 ? uint32_t(expert_bytes) : 0u;  // < 4 GiB when ec > 1
            fn(win);
        }
    }
}

// The matrix-vector path of moe_matmul (moe_matvec.comp, a workgroup per `mv_rows` rows of a
// pair's expert): its dispatches over the weight windows, with x and y as `act` binds them.
// `pipe` is a moe_matvec variant of w's type (float or quantized x).
void expert_matvecs(Stream& s, const ExpertWeights& w, const weights::Layout& layout, const MoeRouting& r,
                    bool x_per_pair, const ActivationWindows& act, const gpu::Pipeline& pipe, uint32_t mv_rows,
                    const char* op);

}  // namespace vkllm::ops::moe_detail
