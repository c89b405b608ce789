// Activation rounding as llama.cpp's CPU backend does before quantised dot products.
#include <cmath>
#include <string>
#include <vector>

#include "cpu/ref_ops.h"
#include "gguf/quant.h"

namespace vkllm::cpu {

// round_activations below gives scales[b] * q[i] (as floats: up to the sign of a zero).
void quantize_activations(const float* x, int64_t n, int block, int8_t* q, float* scales, int32_t* sums) {
    if (block != 32 && block != 256) throw ShapeError("quantize_activations: block must be 32 or 256");
    if (n % block)
        throw ShapeError("quantize_activations: " + std::to_string(n) + " is not a multiple of " + std::to_string(block));
    const int group = block == 32 ? 32 : 16;
    for (int64_t b = 0; b < n; b += block) {
        const float* xb = x + b;
        int8_t* qb = q + b;
        if (block == 32) {
            // Q8_0/Q8_1: d = max|x|/127 kept as fp16; q = round-half-even(x * 127/max|x|).
            float amax = 0;
            for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
            scales[b / 32] = gguf::fp16_to_fp32(gguf::fp32_to_fp16(amax / 127.0f));
            const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
            for (int j = 0; j < 32; ++j) qb[j] = int8_t(std::nearbyint(xb[j] * id));
        } else {
            // Q8_K: scale from the signed value of largest magnitude (first on ties).
            float amax = 0, m = 0;
            for (int j = 0; j < 256; ++j)
                if (std::fabs(xb[j]) > amax) {
                    amax = std::fabs(xb[j]);
                    m = xb[j];
                }
            if (amax == 0.0f) {
                for (int j = 0; j < 256; ++j) qb[j] = 0;
                scales[b / 256] = 0.0f;
            } else {
                const float iscale = -127.0f / m;
                scales[b / 256] = 1.0f / iscale;
                for (int j = 0; j < 256; ++j) qb[j] = int8_t(std::fmin(127.0f, std::nearbyint(iscale * xb[j])));
            }
        }
        for (int g = 0; g < block; g += group) {
            int32_t s = 0;
            for (int j = 0; j < group; ++j) s += qb[g + j];
            sums[(b + g) / group] = s;
        }
    }
}

void round_activations(const float* x, float* y, int64_t n, int block) {
    if (block != 32 && block != 256) throw ShapeError("round_activations: block must be 32 or 256");
    if (n % block) throw ShapeError("round_activations: " + std::to_string(n) + " is not a multiple of " + std::to_string(block));
    // y = d * q, exactly what the quantized form holds.
    std::vector<int8_t> q(static_cast<size_t>(n));
    std::vector<float> scales(size_t(n / block));
    std::vector<int32_t> sums(size_t(n / (block == 32 ? 32 : 16)));
    quantize_activations(x, n, block, q.data(), scales.data(), sums.data());
    for (int64_t i = 0; i < n; ++i) y[i] = scales[size_t(i / block)] * float(q[size_t(i)]);
}

}  // namespace vkllm::cpu
