// Activations the dense ops (ops.h) do not have, over tensor views. Like every op these record a
// dispatch and insert no barrier; the math is cpu/ref_activation_extra.h's.
#pragma once

#include "ops/ops.h"
#include "ops/tensor_view.h"

namespace vkllm::ops {

// y = max(x, 0)^2 elementwise (ggml_relu then ggml_sqr: Nemotron-H's FFN activation). x and y
// are f32 views of one shape, rows at any stride. y may be x itself (the same buffer, offset
// and stride: in place); otherwise the two must not overlap. ShapeError names the operand.
void relu_sqr(Stream& s, const TensorView& x, const TensorView& y);

}  // namespace vkllm::ops
