// Reference activations beyond ref_ops.h's, in plain C++ (what the kernels of
// engine/ops/activation_ops.h are tested against).
#pragma once

#include <cstdint>

namespace vkllm::cpu {

// y[i] = max(x[i], 0)^2 over n values (ggml_relu, x > 0 ? x : 0, then ggml_sqr). y may be x.
void relu_sqr(const float* x, float* y, int64_t n);

}  // namespace vkllm::cpu
