#include <stdexcept>
#include <string>

#include "cpu/ref_ops.h"

namespace vkllm::cpu {

void super_correction(float* y, int64_t n_out, const float* a, int64_t n_in, int64_t n_tokens,
                      const SuperCorrection* corrections, int n_corrections) {
    for (int e = 0; e < n_corrections; ++e) {
        const SuperCorrection& c = corrections[e];
        if (c.row < 0 || c.row >= n_out || c.col < 0 || c.col >= n_in)
            throw std::invalid_argument("super_correction: (row " + std::to_string(c.row) + ", col " +
                                        std::to_string(c.col) + ") outside [" + std::to_string(n_out) + ", " +
                                        std::to_string(n_in) + "]");
    }
    for (int64_t t = 0; t < n_tokens; ++t)
        for (int e = 0; e < n_corrections; ++e) {
            const SuperCorrection& c = corrections[e];
            y[t * n_out + c.row] += c.delta * a[t * n_in + c.col];
        }
}

}  // namespace vkllm::cpu
