// IQ4_NL and IQ4_XS encoders: each weight is a 4-bit index into the non-linear table
// kIq4nlValues, times a scale per 32 weights. The method is llama.cpp's: for a group, try the
// scales that put the group's largest weight on each of the table's outer values (15 tries around
// -max/127) and keep the one with the least weighted squared error, the error of a scale d being
// sum w (x - d q)^2 = sum w x^2 - (sum w q x)^2 / (sum w q^2) at its optimal d = sum w q x / sum w q^2.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "gguf/iq_grids.h"
#include "gguf/quant_blocks.h"
#include "gguf/quant_iq_encode.h"

namespace vkllm::gguf {

namespace {

constexpr float kTinyGroup = 1e-15f;  // groups whose largest magnitude is below this are stored as zero
constexpr int kScaleTries = 7;        // 2 * 7 + 1 candidate scales per group

// Index of the table value nearest to v (the lower one on a tie).
int nearest_code(float v) {
    const int8_t* t = kIq4nlValues;
    if (v <= t[0]) return 0;
    if (v >= t[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        (v < float(t[mid]) ? hi : lo) = mid;
    }
    return v - float(t[lo]) < float(t[hi]) - v ? lo : hi;
}

// The weighted least-squares scale of a group for codes chosen at inverse scale `id`:
// returns sum w q x and sum w q^2 (so d = sqx / sq2 and the error drop is sqx^2 / sq2).
void fit(const float* x, const float* w, int n, float id, float* sqx, float* sq2) {
    *sqx = *sq2 = 0.0f;
    for (int j = 0; j < n; ++j) {
        const float q = float(kIq4nlValues[nearest_code(id * x[j])]);
        *sqx += w[j] * q * x[j];
        *sq2 += w[j] * q * q;
    }
}

// The best scale of one 32-weight group (0 for a group of zeros).
float group_scale(const float* x, const float* w) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j)
        if (std::fabs(x[j]) > amax) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    if (amax < kTinyGroup) return 0.0f;
    // Start: the largest weight on the table's most negative value (-127).
    float sqx, sq2;
    fit(x, w, 32, float(kIq4nlValues[0]) / max, &sqx, &sq2);
    float d = sq2 > 0 ? sqx / sq2 : 0.0f, best = d * sqx;
    for (int t = -kScaleTries; t <= kScaleTries; ++t) {
        fit(x, w, 32, float(t + kIq4nlValues[0]) / max, &sqx, &sq2);
        if (sq2 > 0 && sqx * sqx > best * sq2) {
            d = sqx / sq2;
            best = d * sqx;
        }
    }
    return d;
}

// Per-weight error weights of a super-block of n: the importance times sqrt(sigma^2 + x^2) (the
// typical magnitude of the block and of the weight itself), or x^2 without an importance.
void error_weights(const float* x, const float* importance, int n, float* w) {
    float sigma2 = 0.0f;
    for (int j = 0; j < n; ++j) sigma2 += x[j] * x[j];
    sigma2 *= 2.0f / float(n);
    for (int j = 0; j < n; ++j) w[j] = importance ? importance[j] * std::sqrt(sigma2 + x[j] * x[j]) : x[j] * x[j];
}

// Codes of 32 weights at scale d, packed as ggml does: weight j in the low nibble of byte j,
// weight j + 16 in the high nibble.
void pack_codes(const float* x, float d, uint8_t* qs) {
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < 16; ++j) qs[j] = uint8_t(nearest_code(id * x[j]) | (nearest_code(id * x[j + 16]) << 4));
}

}  // namespace

// IQ4_NL: d (fp16), qs[16].
void encode_iq4_nl(const float* x, const float* importance, uint8_t* out) {
    float w[32];
    error_weights(x, importance, 32, w);
    const float d = group_scale(x, w);
    put_half(out, d);
    pack_codes(x, half_at(out), out + 2);
}

// IQ4_XS: d (fp16), scales_h (u16: high 2 bits of each 6-bit group scale), scales_l[4] (low
// nibbles), qs[128]. A group's scale is d * (l - 32), l in 0..63; d = -(the scale of largest
// magnitude) / 32, so that one lands on l = 0.
void encode_iq4_xs(const float* x, const float* importance, uint8_t* out) {
    float w[256], scales[8], max_scale = 0.0f;
    error_weights(x, importance, 256, w);
    for (int g = 0; g < 8; ++g) {
        scales[g] = group_scale(x + 32 * g, w + 32 * g);
        if (std::fabs(scales[g]) > std::fabs(max_scale)) max_scale = scales[g];
    }
    put_half(out, -max_scale / 32.0f);
    const float d = half_at(out);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint16_t scales_h = 0;
    uint8_t* scales_l = out + 4;
    std::memset(scales_l, 0, 4);
    for (int g = 0; g < 8; ++g) {
        const int l = std::min(31, std::max(-32, int(std::lrintf(id * scales[g])))) + 32;
        scales_l[g / 2] |= uint8_t((l & 0xF) << (4 * (g % 2)));
        scales_h |= uint16_t((l >> 4) << (2 * g));
        pack_codes(x + 32 * g, d * float(l - 32), out + 8 + 16 * g);
    }
    std::memcpy(out + 2, &scales_h, 2);
}

}  // namespace vkllm::gguf
