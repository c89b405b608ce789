// TQ1_0 and TQ2_0 encoders: 256 weights as ternary codes {-1, 0, +1} times one fp16 scale.
// Without an importance vector the scale is the block's largest magnitude and each weight rounds
// to the nearest of {-d, 0, d}, as llama.cpp does (exact for BitNet-style ternary weights).
// With one, the scale and the set of non-zero weights minimise the weighted squared error: the
// best set with k non-zero codes is the k largest magnitudes, and for it the best scale is
// d = sum w|x| / sum w, the error falling by (sum w|x|)^2 / sum w; every k is tried.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "gguf/quant_blocks.h"
#include "gguf/quant_iq_encode.h"

namespace vkllm::gguf {

namespace {

// Ternary codes (0, 1, 2 for -1, 0, +1) of a 256-block, and the block's scale.
float ternary_codes(const float* x, const float* importance, int* q) {
    float amax = 0.0f;
    for (int j = 0; j < 256; ++j) amax = std::max(amax, std::fabs(x[j]));
    if (!importance || amax == 0.0f) {
        const float id = amax != 0.0f ? 1.0f / amax : 0.0f;
        for (int j = 0; j < 256; ++j) q[j] = int(std::lround(x[j] * id)) + 1;
        return amax;
    }
    int order[256];
    std::iota(order, order + 256, 0);
    std::sort(order, order + 256, [&](int a, int b) { return std::fabs(x[a]) > std::fabs(x[b]); });
    double swx = 0.0, sw = 0.0, best_gain = 0.0;
    int best_k = 0;
    for (int k = 0; k < 256; ++k) {
        const int j = order[k];
        swx += double(importance[j]) * std::fabs(x[j]);
        sw += importance[j];
        if (sw > 0.0 && swx * swx / sw > best_gain) {
            best_gain = swx * swx / sw;
            best_k = k + 1;
        }
    }
    swx = sw = 0.0;
    for (int j = 0; j < 256; ++j) q[j] = 1;
    for (int k = 0; k < best_k; ++k) {
        const int j = order[k];
        q[j] = x[j] < 0.0f ? 0 : 2;
        swx += double(importance[j]) * std::fabs(x[j]);
        sw += importance[j];
    }
    // Every weight had zero importance: fall back to the unweighted rounding.
    if (best_k == 0) return ternary_codes(x, nullptr, q);
    return float(swx / sw);
}

// Five (or fewer, then padded with zeros at the end) trits as the fraction byte/256 ~ 0.t1t2t3t4t5
// in base 3, rounded up so that the decoder's truncations land on each trit.
uint8_t pack_trits(const int* trits, int count, int stride) {
    int v = 0;
    for (int n = 0; n < 5; ++n) v = 3 * v + (n < count ? trits[n * stride] : 0);
    return uint8_t((v * 256 + 242) / 243);
}

}  // namespace

// TQ1_0: qs[48] (five trits per byte), qh[4] (four per byte), d. See decode_tq1_0 for the order.
void encode_tq1_0(const float* x, const float* importance, uint8_t* out) {
    int q[256];
    put_half(out + 52, ternary_codes(x, importance, q));
    for (int m = 0; m < 32; ++m) out[m] = pack_trits(q + m, 5, 32);
    for (int m = 0; m < 16; ++m) out[32 + m] = pack_trits(q + 160 + m, 5, 16);
    for (int m = 0; m < 4; ++m) out[48 + m] = pack_trits(q + 240 + m, 4, 4);
}

// TQ2_0: qs[64] (four 2-bit codes per byte: code l of qs[32h + m] is weight 128h + 32l + m), d.
void encode_tq2_0(const float* x, const float* importance, uint8_t* out) {
    int q[256];
    put_half(out + 64, ternary_codes(x, importance, q));
    for (int h = 0; h < 2; ++h)
        for (int m = 0; m < 32; ++m) {
            uint8_t b = 0;
            for (int l = 0; l < 4; ++l) b |= uint8_t(q[128 * h + 32 * l + m] << (2 * l));
            out[32 * h + m] = b;
        }
}

}  // namespace vkllm::gguf
