#include "cpu/ref_activation_extra.h"

#include <string>

#include "cpu/ref_ops.h"

namespace vkllm::cpu {

void relu_sqr(const float* x, float* y, int64_t n) {
    if (n < 0) throw ShapeError("relu_sqr: negative count " + std::to_string(n));
    for (int64_t i = 0; i < n; ++i) {
        const float r = x[i] > 0.0f ? x[i] : 0.0f;
        y[i] = r * r;
    }
}

}  // namespace vkllm::cpu
