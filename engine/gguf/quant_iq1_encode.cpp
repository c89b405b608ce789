// IQ1_S and IQ1_M encoders: each group of 8 weights is a point of the 2048-point IQ1 grid (every
// coordinate -1, 0 or +1) shifted by +-1/8 (the "delta"), times a 3-bit odd multiple of the
// block's scale d: weight = d * (2l + 1) * (coordinate + delta). IQ1_S has one scale and one delta
// sign per 32 weights; IQ1_M one scale per 16 and one delta sign per 8.
//
// The method is llama.cpp's (quantize_row_iq1_s_impl / iq1_m_impl). With three values per
// weight, the best unconstrained assignment of a scale group is found exactly: sorted by value,
// the weights split at two boundaries into the -1, 0 and +1 sets; prefix sums of w x and w give
// every split's least-squares scale and error at once, for each choice of delta signs. Groups of
// 8 whose ternary pattern is not a grid point take the best of the pattern's grid neighbours; the
// group scale is refitted; finally the 3-bit scale codes are chosen against d = (largest group
// scale) / 15, so that the largest group takes code 7 (multiplier 15).
//
// The block scale then follows llama.cpp to the letter, fudge factors included: IQ1_S stores
// d * 1.125; IQ1_M refits d to the chosen codes by least squares over the block and stores that
// times 1.1125. Every scale above is a weighted least-squares fit, which shrinks the quantized
// weights towards zero (<Q,W> = |Q|^2 < |W|^2 in the error weights' norm); at one and a half bits
// that shrinkage is large (zoo-wide's IQ1_S matrices: <Q,W>/|W|^2 of 0.81-0.85 with the plain fit)
// and the enlarged d gives a larger weighted error (0.147 against 0.125 there) but a lower
// perplexity (docs/imatrix.md).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "gguf/quant_blocks.h"
#include "gguf/quant_grid_index.h"
#include "gguf/quant_iq_encode.h"

namespace vkllm::gguf {

namespace {

constexpr float kDelta = 0.125f;

// What differs between the two types' blocks of 256.
struct Iq1Layout {
    int group;               // weights per 3-bit scale: 32 (IQ1_S) or 16 (IQ1_M)
    int parts;               // delta signs per group: 1 or 2
    float tiny_group;        // a group whose largest |x| is below this keeps scale 0
    bool flat_default;       // without an importance matrix: weights sqrt(sigma2 + x^2) (else x^2)
    bool refit_d;            // refit d to the chosen codes by least squares
    float d_factor;          // the stored d is d times this (llama.cpp's fudge factors)
};
constexpr Iq1Layout kIq1S{32, 1, 1e-12f, true, false, 1.125f};
constexpr Iq1Layout kIq1M{16, 2, 1e-7f, false, true, 1.1125f};

// Value of ternary level L (0, 1, 2 for -1, 0, +1) with a delta of sign `negative`.
inline float level_value(int level, bool negative) { return float(level - 1) + (negative ? -kDelta : kDelta); }

struct Iq1Group {
    float scale = 0.0f;
    bool negative[2] = {};  // delta sign per part (IQ1_S: one part of 32; IQ1_M: two of 8)
    uint16_t point[4] = {};
};

// Exact best split of a group of n weights whose `parts` equal parts each have their own delta
// sign; then the grid points. `w` are the error weights.
Iq1Group search_group(const IqGridIndex& gi, const float* x, const float* w, int n, int parts, float tiny_group) {
    Iq1Group g;
    float max = 0.0f;
    for (int i = 0; i < n; ++i) max = std::max(max, std::fabs(x[i]));
    const uint16_t zero_point = uint16_t(gi.grid_index(0x5555) >= 0 ? gi.grid_index(0x5555) : 0);
    std::fill(g.point, g.point + n / 8, zero_point);
    if (max < tiny_group) return g;
    int order[32];
    std::iota(order, order + n, 0);
    std::sort(order, order + n, [&](int a, int b) { return x[a] < x[b]; });
    // Prefix sums per part over the sorted order: sx[p][k] = sum of w x over the first k sorted
    // weights that belong to part p; sw likewise for w.
    float sx[2][33] = {}, sw[2][33] = {};
    const int part_size = n / parts;
    for (int k = 0; k < n; ++k) {
        const int i = order[k], p = i / part_size;
        for (int q = 0; q < parts; ++q) {
            sx[q][k + 1] = sx[q][k] + (q == p ? w[i] * x[i] : 0.0f);
            sw[q][k + 1] = sw[q][k] + (q == p ? w[i] : 0.0f);
        }
    }
    float best = -1.0f;
    int best1 = -1, best2 = -1, best_signs = 0;
    for (int i1 = 0; i1 <= n; ++i1)
        for (int i2 = i1; i2 <= n; ++i2)
            for (int signs = 0; signs < (1 << parts); ++signs) {
                float sqx = 0.0f, sq2 = 0.0f;
                for (int p = 0; p < parts; ++p) {
                    const bool neg = (signs >> p) & 1;
                    const float v0 = level_value(0, neg), v1 = level_value(1, neg), v2 = level_value(2, neg);
                    sqx += sx[p][i1] * v0 + (sx[p][i2] - sx[p][i1]) * v1 + (sx[p][n] - sx[p][i2]) * v2;
                    sq2 += sw[p][i1] * v0 * v0 + (sw[p][i2] - sw[p][i1]) * v1 * v1 + (sw[p][n] - sw[p][i2]) * v2 * v2;
                }
                if (sq2 > 0.0f && sqx * sqx > best * sq2) {
                    best = sqx * sqx / sq2;
                    g.scale = sqx / sq2;
                    best1 = i1;
                    best2 = i2;
                    best_signs = signs;
                }
            }
    if (best1 < 0) return g;
    int level[32];
    for (int k = 0; k < n; ++k) level[order[k]] = k < best1 ? 0 : k < best2 ? 1 : 2;
    for (int p = 0; p < parts; ++p) g.negative[p] = (best_signs >> p) & 1;
    if (g.scale < 0.0f) {  // a negative scale: mirror the levels and the deltas instead
        g.scale = -g.scale;
        for (int i = 0; i < n; ++i) level[i] = 2 - level[i];
        for (int p = 0; p < parts; ++p) g.negative[p] = !g.negative[p];
    }
    bool all_on_grid = true;
    for (int k = 0; k < n / 8; ++k) {
        const bool neg = g.negative[(8 * k) / part_size];
        const uint32_t code = gi.code_of(level + 8 * k);
        const int on_grid = gi.grid_index(code);
        if (on_grid >= 0) {
            g.point[k] = uint16_t(on_grid);
            continue;
        }
        all_on_grid = false;
        float best_err = INFINITY;
        for (uint16_t i : gi.neighbours(code)) {
            float err = 0.0f;
            for (int j = 0; j < 8; ++j) {
                const float diff = g.scale * level_value(gi.level(i, j), neg) - x[8 * k + j];
                err += w[8 * k + j] * diff * diff;
            }
            if (err < best_err) {
                best_err = err;
                g.point[k] = i;
            }
        }
    }
    if (!all_on_grid) {
        float sqx = 0.0f, sq2 = 0.0f;
        for (int i = 0; i < n; ++i) {
            const float q = level_value(gi.level(g.point[i / 8], i % 8), g.negative[i / part_size]);
            sqx += w[i] * q * x[i];
            sq2 += w[i] * q * q;
        }
        if (sqx > 0.0f && sq2 > 0.0f) g.scale = sqx / sq2;
    }
    return g;
}

// Encodes a 256-block in `layout`'s groups; returns the d to store, fills the groups and their
// 3-bit scale codes (group scale ~ d * (2 code + 1)).
float encode_iq1_block(const float* x, const float* importance, const Iq1Layout& layout, Iq1Group* groups, int* codes) {
    const IqGridIndex& gi = iq_grid_index(TensorType::IQ1_S);
    float w[256], sumx2 = 0.0f;
    for (int i = 0; i < 256; ++i) sumx2 += x[i] * x[i];
    const float sigma2 = 2.0f * sumx2 / 256.0f;
    for (int i = 0; i < 256; ++i)
        w[i] = importance ? importance[i] * std::sqrt(sigma2 + x[i] * x[i])
               : layout.flat_default ? std::sqrt(sigma2 + x[i] * x[i])
                                     : x[i] * x[i];
    const int group = layout.group, n_groups = 256 / group;
    float max_scale = 0.0f;
    for (int g = 0; g < n_groups; ++g) {
        groups[g] = search_group(gi, x + g * group, w + g * group, group, layout.parts, layout.tiny_group);
        max_scale = std::max(max_scale, groups[g].scale);
    }
    std::fill(codes, codes + n_groups, 0);
    if (max_scale <= 0.0f) return 0.0f;
    float d = max_scale / 15.0f;
    for (int g = 0; g < n_groups; ++g) codes[g] = std::clamp(int(std::lrintf(0.5f * (groups[g].scale / d - 1.0f))), 0, 7);
    if (layout.refit_d) {
        double sxc = 0.0, sc2 = 0.0;
        const int part_size = group / layout.parts;
        for (int i = 0; i < 256; ++i) {
            const Iq1Group& g = groups[i / group];
            const int in = i % group;
            const float c =
                float(2 * codes[i / group] + 1) * level_value(gi.level(g.point[in / 8], in % 8), g.negative[in / part_size]);
            sxc += double(w[i]) * x[i] * c;
            sc2 += double(w[i]) * c * c;
        }
        if (sc2 > 0.0) d = float(sxc / sc2);
    }
    return d * layout.d_factor;
}

}  // namespace

// IQ1_S: d, qs[32] (low 8 index bits), qh[8] u16 per 32 weights: four 3-bit high index parts,
// the 3-bit scale in bits 12-14, the delta's sign in bit 15. (llama.cpp writes IQ1_S only with
// an importance matrix; without one the weights are a flat matrix's.)
void encode_iq1_s(const float* x, const float* importance, uint8_t* out) {
    Iq1Group groups[8];
    int codes[8];
    put_half(out, encode_iq1_block(x, importance, kIq1S, groups, codes));
    for (int g = 0; g < 8; ++g) {
        uint16_t qh = uint16_t(codes[g] << 12 | (groups[g].negative[0] ? 0x8000 : 0));
        for (int l = 0; l < 4; ++l) {
            out[2 + 4 * g + l] = uint8_t(groups[g].point[l] & 255);
            qh |= uint16_t((groups[g].point[l] >> 8) << (3 * l));
        }
        std::memcpy(out + 34 + 2 * g, &qh, 2);
    }
}

// IQ1_M: qs[32] (low 8 index bits), qh[16] (a nibble per 8 weights: 3 high index bits and the
// delta's sign in bit 3), scales: four u16 holding a 3-bit scale per 16 weights in bits 0-11 and
// the fp16 d in their top nibbles.
void encode_iq1_m(const float* x, const float* importance, uint8_t* out) {
    Iq1Group groups[16];
    int codes[16];
    const uint16_t d = fp32_to_fp16(encode_iq1_block(x, importance, kIq1M, groups, codes));
    std::memset(out, 0, 56);
    uint16_t sc[4] = {};
    for (int g = 0; g < 16; ++g) {
        sc[g / 4] |= uint16_t(codes[g] << (3 * (g % 4)));
        for (int h = 0; h < 2; ++h) {
            const int k = 2 * g + h;  // group of 8
            out[k] = uint8_t(groups[g].point[h] & 255);
            const int nibble = (groups[g].point[h] >> 8) | (groups[g].negative[h] ? 8 : 0);
            out[32 + k / 2] |= uint8_t(nibble << (4 * (k % 2)));
        }
    }
    for (int i = 0; i < 4; ++i) sc[i] |= uint16_t(((d >> (4 * i)) & 0xF) << 12);
    std::memcpy(out + 48, sc, 8);
}

}  // namespace vkllm::gguf
