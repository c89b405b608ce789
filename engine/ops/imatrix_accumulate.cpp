// Importance-matrix sums of a matmul's input (ops/imatrix_accumulate.h).
#include "ops/imatrix_accumulate.h"

#include <string>

#include "gpu/device.h"
#include "gpu/pipeline.h"
#include "ops/dispatch_util.h"
#include "ops/push_constants.h"

namespace vkllm::ops {
namespace {

constexpr uint32_t kThreads = 64;

// Checks sums [n_mat, n] and counts [1, n_mat] and returns their windows.
struct Accumulators {
    detail::Window sums, counts;
};
Accumulators accumulators(gpu::Context& ctx, const TensorView& sums, const TensorView& counts, int64_t n_mat,
                          int64_t n, const char* op) {
    const uint64_t s0 = detail::checked_f32(sums, op, "sums");
    detail::require_shape(sums, n_mat, n, op, "sums");
    detail::require_packed(sums, op, "sums");
    const uint64_t c0 = detail::checked_vector(counts, gguf::TensorType::I32, n_mat, op, "counts");
    return {detail::window(ctx, *sums.buffer, s0, uint64_t(n_mat) * uint64_t(n), op, "sums"),
            detail::window(ctx, *counts.buffer, c0, uint64_t(n_mat), op, "counts")};
}

uint32_t column_groups(int64_t n, uint32_t wg, const gpu::Context& ctx, const char* op) {
    const uint64_t groups = (uint64_t(n) + wg - 1) / wg;
    detail::require(groups <= ctx.caps().max_workgroup_count[0], op,
                    "a row of " + std::to_string(n) + " columns needs more workgroups than the device allows");
    return uint32_t(groups);
}

}  // namespace

void imatrix_accumulate(Stream& s, const TensorView& x, const TensorView& sums, const TensorView& counts) {
    const char* op = "imatrix_accumulate";
    const uint64_t x0 = detail::checked_f32(x, op, "x");
    detail::require(x.cols > 0, op, "x has no columns");
    if (x.rows == 0) return;
    gpu::Context& ctx = s.context();
    const Accumulators acc = accumulators(ctx, sums, counts, 1, x.cols, op);
    const uint64_t span = uint64_t(x.rows - 1) * uint64_t(x.stride()) + uint64_t(x.cols);
    const detail::Window xw = detail::window(ctx, *x.buffer, x0, span, op, "x");
    const uint32_t wg = detail::workgroup_size(ctx, kThreads);
    const ImatrixAccumulatePush push{uint32_t(x.cols), uint32_t(x.rows), xw.shift, uint32_t(x.stride()),
                                     acc.sums.shift, acc.counts.shift, 0, 0, 0};
    const gpu::Pipeline& p = ctx.pipeline(gpu::ShaderId::imatrix_accumulate, 3, sizeof push, {wg});
    s.dispatch(p, {xw.range, acc.sums.range, acc.counts.range}, push, column_groups(x.cols, wg, ctx, op), 1);
}

void imatrix_accumulate_routed(Stream& s, const TensorView& x, bool x_per_pair, const MoeRouting& r,
                               const TensorView& sums, const TensorView& counts) {
    const char* op = "imatrix_accumulate_routed";
    const uint64_t x0 = detail::checked_f32(x, op, "x");
    detail::require(r.experts && r.experts->valid(), op, "the routing has no expert ids (moe_route's experts)");
    detail::require(r.n_tokens >= 0 && r.top_k >= 1, op, "the routing needs top_k >= 1");
    const int64_t n_pairs = r.n_tokens * r.top_k;
    const int64_t want_rows = x_per_pair ? n_pairs : r.n_tokens;
    detail::require(x.rows == want_rows, op,
                    "x has " + std::to_string(x.rows) + " rows, the routing " + std::to_string(want_rows) +
                        (x_per_pair ? " pairs" : " tokens"));
    detail::require(x.cols > 0, op, "x has no columns");
    gpu::Context& ctx = s.context();
    const int64_t n_mat = sums.rows;
    detail::require(n_mat >= 1 && uint64_t(n_mat) <= ctx.caps().max_workgroup_count[1], op,
                    std::to_string(n_mat) + " experts: outside 1 .. the device's workgroup-count limit");
    if (n_pairs == 0) return;
    const Accumulators acc = accumulators(ctx, sums, counts, n_mat, x.cols, op);
    const uint64_t span = uint64_t(x.rows - 1) * uint64_t(x.stride()) + uint64_t(x.cols);
    const detail::Window xw = detail::window(ctx, *x.buffer, x0, span, op, "x");
    const detail::Window iw = detail::window(ctx, *r.experts, 0, uint64_t(n_pairs), op, "experts");
    const uint32_t wg = detail::workgroup_size(ctx, kThreads);
    const ImatrixAccumulatePush push{uint32_t(x.cols), uint32_t(n_pairs), xw.shift, uint32_t(x.stride()),
                                     acc.sums.shift, acc.counts.shift, iw.shift, uint32_t(r.top_k),
                                     x_per_pair ? 1u : 0u};
    const gpu::Pipeline& p = ctx.pipeline(gpu::ShaderId::imatrix_accumulate_routed, 4, sizeof push, {wg});
    s.dispatch(p, {xw.range, acc.sums.range, acc.counts.range, iw.range}, push, column_groups(x.cols, wg, ctx, op),
               uint32_t(n_mat));
}

}  // namespace vkllm::ops
