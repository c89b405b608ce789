// Softmax in double on the CPU: the reference ops, expert routing and the sampler share it, so
// their probabilities are computed one way.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

namespace vkllm {

// z = exp(z - max z) / sum, in place. Entries of -inf get 0; when every entry is -inf (nothing
// visible) all get 0.
inline void softmax_in_place(double* z, size_t n) {
    constexpr double kNegInf = -std::numeric_limits<double>::infinity();
    double max_z = kNegInf;
    for (size_t i = 0; i < n; ++i) max_z = std::max(max_z, z[i]);
    if (max_z == kNegInf) {
        std::fill(z, z + n, 0.0);
        return;
    }
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) {
        z[i] = std::exp(z[i] - max_z);  // exp(-inf) = 0
        sum += z[i];
    }
    for (size_t i = 0; i < n; ++i) z[i] /= sum;
}

}  // namespace vkllm
