// Importance-matrix collection on the GPU (vkllm imatrix, vkllm/imatrix.h): the sums a quantizer
// weighs each input column of a weight by, taken from the weight's matmul input as the forward
// pass records it. See shaders/imatrix_accumulate.comp for the arithmetic.
#pragma once

#include "gpu/stream.h"
#include "ops/ops.h"
#include "ops/tensor_view.h"

namespace vkllm::ops {

// sums[0][j] += sum over the rows r of x of x[r][j]^2 and counts[0] += x.rows.
// x: f32 [rows, n] (any row stride); sums: f32 [1, n] packed; counts: i32 [1, 1].
void imatrix_accumulate(Stream& s, const TensorView& x, const TensorView& sums, const TensorView& counts);

// Stacked experts: for every routed pair p (r.n_tokens * r.top_k of them, r.experts), its row of x
// (p with x_per_pair, else p / top_k) adds x^2 into row experts[p] of sums and 1 into that
// expert's count. x: f32 [n_tokens or pairs, n]; sums: f32 [n_expert, n] packed; counts: i32
// [1, n_expert]. An expert id outside 0..n_expert-1 adds nothing.
void imatrix_accumulate_routed(Stream& s, const TensorView& x, bool x_per_pair, const MoeRouting& r,
                               const TensorView& sums, const TensorView& counts);

}  // namespace vkllm::ops
