// IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S encoders. Each group of 4 or 8 weights becomes a
// point of the type's grid (magnitudes) plus sign bits, times a group scale (per 16 or 32
// weights) that is a 4-bit odd multiple of the block's fp16 scale d.
//
// The method is llama.cpp's (quantize_row_iq2_xxs_impl and its siblings): the signs are taken
// from the weights (for the types that store 7 sign bits per 8 weights, the weight whose sign
// flip costs least is flipped to make the number of minus signs even); then for each of a few
// candidate scales around max|x| / (top grid value), every group of magnitudes is rounded to
// the nearest lattice point, replaced by the best of its precomputed grid neighbours when that
// point is not on the grid, and the scale refitted by weighted least squares; the candidate
// with the least weighted squared error wins. Errors are measured with the values the decoder
// uses (the grid's real coordinates), and after the group scales are rounded to their 4-bit
// codes d is refitted over the whole block, in place of llama.cpp's fixed fudge factors.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "gguf/quant_blocks.h"
#include "gguf/quant_grid_index.h"
#include "gguf/quant_iq_encode.h"

namespace vkllm::gguf {

namespace {

constexpr float kTinyGroup = 1e-8f;  // groups whose largest magnitude is below this are stored as zero

enum class DefaultWeight {
    Ones,            // types llama.cpp only writes with an importance matrix: a flat one
    Square,          // x^2
    SquarePlusBlock  // x^2 + sigma^2 / 4
};

struct GridType {
    TensorType type;
    int group;               // weights per group scale: 16 or 32
    bool parity_signs;       // 7 sign bits per 8 weights, the 8th implied by even parity
    int tries;               // candidate scales on each side of the starting one
    float step;              // their spacing, in units of the lattice's level spacing
    float scale_unit;        // group scale = d * (2l + 1) * scale_unit, l in 0..15
    DefaultWeight default_weight;
    float sigma_factor;      // sigma^2 = sigma_factor * mean(x^2) over the block
};

// One encoded 256-block before packing.
struct GridBlock {
    float d = 0.0f;
    int scale_code[16] = {};  // per group
    uint16_t point[64] = {};  // grid index per 4 or 8 weights
    uint8_t signs[32] = {};   // per 8 weights, bit j: weight j is negative
};

// Error weights of a 256-block (see GridType).
void block_weights(const GridType& t, const float* x, const float* importance, float* w) {
    float sumx2 = 0.0f;
    for (int i = 0; i < 256; ++i) sumx2 += x[i] * x[i];
    const float sigma2 = t.sigma_factor * sumx2 / 256.0f;
    for (int i = 0; i < 256; ++i) {
        if (importance) w[i] = importance[i] * std::sqrt(sigma2 + x[i] * x[i]);
        else if (t.default_weight == DefaultWeight::Ones) w[i] = std::sqrt(sigma2 + x[i] * x[i]);
        else if (t.default_weight == DefaultWeight::Square) w[i] = x[i] * x[i];
        else w[i] = 0.25f * sigma2 + x[i] * x[i];
    }
}

// The level whose value is nearest to v.
int nearest_level(const IqLattice& lat, float v) {
    int l = 0;
    while (l + 1 < int(lat.levels) && v > 0.5f * float(lat.values[l] + lat.values[l + 1])) ++l;
    return l;
}

// The grid point for `dim` magnitudes at scale s: the lattice point nearest to x / s if it is on
// the grid, else the neighbour with the least weighted squared error.
uint16_t assign_point(const IqGridIndex& gi, const float* x, const float* w, float s) {
    const IqLattice& lat = gi.lattice();
    const float inv = s > 0.0f ? 1.0f / s : 0.0f;
    int levels[8];
    for (uint32_t j = 0; j < lat.dim; ++j) levels[j] = nearest_level(lat, x[j] * inv);
    const uint32_t code = gi.code_of(levels);
    const int on_grid = gi.grid_index(code);
    if (on_grid >= 0) return uint16_t(on_grid);
    float best = INFINITY;
    uint16_t best_i = 0;
    for (uint16_t i : gi.neighbours(code)) {
        const float* q = gi.coords(i);
        float err = 0.0f;
        for (uint32_t j = 0; j < lat.dim; ++j) {
            const float diff = s * q[j] - x[j];
            err += w[j] * diff * diff;
        }
        if (err < best) {
            best = err;
            best_i = i;
        }
    }
    return best_i;
}

// sum w x q and sum w q^2 of a group for its assigned points (q: the points' coordinates).
void group_sums(const IqGridIndex& gi, const float* x, const float* w, int n, const uint16_t* points, float* sqx, float* sq2) {
    const IqLattice& lat = gi.lattice();
    *sqx = *sq2 = 0.0f;
    for (int p = 0; p < n / int(lat.dim); ++p) {
        const float* q = gi.coords(points[p]);
        for (uint32_t j = 0; j < lat.dim; ++j) {
            const int i = p * int(lat.dim) + int(j);
            *sqx += w[i] * x[i] * q[j];
            *sq2 += w[i] * q[j] * q[j];
        }
    }
}

// Best scale and points of one group of n magnitudes (n / dim points written to `points`).
float search_group(const GridType& t, const IqGridIndex& gi, const float* x, const float* w, int n, uint16_t* points) {
    const IqLattice& lat = gi.lattice();
    const int dim = int(lat.dim);
    float max = 0.0f;
    for (int i = 0; i < n; ++i) max = std::max(max, x[i]);
    std::fill(points, points + n / dim, uint16_t(0));
    if (max < kTinyGroup) return 0.0f;
    // llama.cpp puts max on the lattice's top level, 2 * levels - 1 in its odd-integer units.
    const float top = float(2 * lat.levels - 1), top_value = float(lat.values[lat.levels - 1]);
    float best = 0.0f, scale = 0.0f;
    uint16_t trial[64];
    for (int k = -t.tries; k <= t.tries; ++k) {
        const float s = max / (top_value * (1.0f + float(k) * t.step / top));
        for (int p = 0; p < n / dim; ++p) trial[p] = assign_point(gi, x + p * dim, w + p * dim, s);
        float sqx, sq2;
        group_sums(gi, x, w, n, trial, &sqx, &sq2);
        if (sq2 > 0.0f && sqx > 0.0f && sqx * sqx > best * sq2) {
            scale = sqx / sq2;
            best = scale * sqx;
            std::copy(trial, trial + n / dim, points);
        }
    }
    if (scale <= 0.0f) return 0.0f;
    // One more assignment at the fitted scale, kept if it is better.
    for (int p = 0; p < n / dim; ++p) trial[p] = assign_point(gi, x + p * dim, w + p * dim, scale);
    float sqx, sq2;
    group_sums(gi, x, w, n, trial, &sqx, &sq2);
    if (sq2 > 0.0f && sqx > 0.0f && sqx * sqx > best * sq2) {
        scale = sqx / sq2;
        std::copy(trial, trial + n / dim, points);
    }
    return scale;
}

GridBlock encode_grid_block(const GridType& t, const float* x, const float* importance) {
    const IqGridIndex& gi = iq_grid_index(t.type);
    const IqLattice& lat = gi.lattice();
    float w[256], mag[256], scales[16];
    block_weights(t, x, importance, w);
    GridBlock b;
    for (int k = 0; k < 32; ++k) {  // signs per 8 weights
        const float* xs = x + 8 * k;
        uint8_t s = 0;
        for (int j = 0; j < 8; ++j) {
            mag[8 * k + j] = std::fabs(xs[j]);
            if (xs[j] < 0.0f) s |= uint8_t(1 << j);
        }
        if (t.parity_signs && std::popcount(s) % 2) {
            // Flip the sign that costs least (w x^2); its magnitude is then fitted as negative.
            int cheapest = 0;
            for (int j = 1; j < 8; ++j)
                if (w[8 * k + j] * xs[j] * xs[j] < w[8 * k + cheapest] * xs[cheapest] * xs[cheapest]) cheapest = j;
            s ^= uint8_t(1 << cheapest);
            mag[8 * k + cheapest] = -mag[8 * k + cheapest];
        }
        b.signs[k] = s;
    }
    const int groups = 256 / t.group, per_group = t.group / int(lat.dim);
    float max_scale = 0.0f;
    for (int g = 0; g < groups; ++g) {
        scales[g] = search_group(t, gi, mag + g * t.group, w + g * t.group, t.group, b.point + g * per_group);
        max_scale = std::max(max_scale, scales[g]);
    }
    if (max_scale <= 0.0f) return b;
    // Group scales as (2l + 1) * unit * d, the largest at l = 15; then d refitted to the codes.
    float d = max_scale / (31.0f * t.scale_unit);
    for (int g = 0; g < groups; ++g)
        b.scale_code[g] = std::clamp(int(std::lrintf(0.5f * (scales[g] / (d * t.scale_unit) - 1.0f))), 0, 15);
    double sxc = 0.0, sc2 = 0.0;
    for (int i = 0; i < 256; ++i) {
        const float q = gi.coords(b.point[i / lat.dim])[i % lat.dim];
        const float c = float(2 * b.scale_code[i / t.group] + 1) * t.scale_unit * q;
        sxc += double(w[i]) * mag[i] * c;
        sc2 += double(w[i]) * c * c;
    }
    if (sc2 > 0.0 && sxc > 0.0) d = float(sxc / sc2);
    b.d = d;
    return b;
}

constexpr GridType kIq2xxs{TensorType::IQ2_XXS, 32, true, 6, 0.1f, 0.125f, DefaultWeight::Ones, 1.0f};
constexpr GridType kIq2xs{TensorType::IQ2_XS, 16, true, 9, 0.1f, 0.125f, DefaultWeight::Ones, 1.0f};
constexpr GridType kIq2s{TensorType::IQ2_S, 16, false, 9, 0.1f, 0.125f, DefaultWeight::SquarePlusBlock, 2.0f};
constexpr GridType kIq3xxs{TensorType::IQ3_XXS, 32, true, 15, 0.2f, 0.25f, DefaultWeight::Square, 2.0f};
constexpr GridType kIq3s{TensorType::IQ3_S, 32, false, 9, 0.2f, 1.0f, DefaultWeight::Square, 2.0f};

}  // namespace

// IQ2_XXS: d, then per 32 weights a u32 of four 8-bit grid indices and a u32 of four 7-bit
// sign groups with the 4-bit scale in bits 28-31.
void encode_iq2_xxs(const float* x, const float* importance, uint8_t* out) {
    const GridBlock b = encode_grid_block(kIq2xxs, x, importance);
    put_half(out, b.d);
    for (int g = 0; g < 8; ++g) {
        uint32_t idx = 0, aux = uint32_t(b.scale_code[g]) << 28;
        for (int l = 0; l < 4; ++l) {
            idx |= uint32_t(b.point[4 * g + l]) << (8 * l);
            aux |= uint32_t(b.signs[4 * g + l] & 127) << (7 * l);
        }
        std::memcpy(out + 2 + 8 * g, &idx, 4);
        std::memcpy(out + 6 + 8 * g, &aux, 4);
    }
}

// IQ2_XS: d, qs[32] u16 (9-bit grid index, 7 sign bits above it), scales[8] (two 4-bit scales per 32).
void encode_iq2_xs(const float* x, const float* importance, uint8_t* out) {
    const GridBlock b = encode_grid_block(kIq2xs, x, importance);
    put_half(out, b.d);
    for (int k = 0; k < 32; ++k) {
        const uint16_t q = uint16_t(b.point[k] | (b.signs[k] & 127) << 9);
        std::memcpy(out + 2 + 2 * k, &q, 2);
    }
    for (int g = 0; g < 8; ++g) out[66 + g] = uint8_t(b.scale_code[2 * g] | b.scale_code[2 * g + 1] << 4);
}

// IQ2_S: d, qs[32] (low 8 index bits), signs[32], qh[8] (2 high index bits per 8 weights),
// scales[8] (two 4-bit scales per 32).
void encode_iq2_s(const float* x, const float* importance, uint8_t* out) {
    const GridBlock b = encode_grid_block(kIq2s, x, importance);
    put_half(out, b.d);
    std::memset(out + 66, 0, 8);
    for (int k = 0; k < 32; ++k) {
        out[2 + k] = uint8_t(b.point[k] & 255);
        out[34 + k] = b.signs[k];
        out[66 + k / 4] |= uint8_t((b.point[k] >> 8) << (2 * (k % 4)));
    }
    for (int g = 0; g < 8; ++g) out[74 + g] = uint8_t(b.scale_code[2 * g] | b.scale_code[2 * g + 1] << 4);
}

// IQ3_XXS: d, qs[64] (8-bit grid indices, two per 8 weights), then per 32 weights a u32 of four
// 7-bit sign groups with the 4-bit scale in bits 28-31.
void encode_iq3_xxs(const float* x, const float* importance, uint8_t* out) {
    const GridBlock b = encode_grid_block(kIq3xxs, x, importance);
    put_half(out, b.d);
    for (int p = 0; p < 64; ++p) out[2 + p] = uint8_t(b.point[p]);
    for (int g = 0; g < 8; ++g) {
        uint32_t aux = uint32_t(b.scale_code[g]) << 28;
        for (int l = 0; l < 4; ++l) aux |= uint32_t(b.signs[4 * g + l] & 127) << (7 * l);
        std::memcpy(out + 66 + 4 * g, &aux, 4);
    }
}

// IQ3_S: d, qs[64] (low 8 index bits), qh[8] (9th index bit of a 32's eight points), signs[32],
// scales[4] (two 4-bit scales per 64).
void encode_iq3_s(const float* x, const float* importance, uint8_t* out) {
    const GridBlock b = encode_grid_block(kIq3s, x, importance);
    put_half(out, b.d);
    std::memset(out + 66, 0, 8);
    for (int p = 0; p < 64; ++p) {
        out[2 + p] = uint8_t(b.point[p] & 255);
        out[66 + p / 8] |= uint8_t((b.point[p] >> 8) << (p % 8));
    }
    std::memcpy(out + 74, b.signs, 32);
    for (int g = 0; g < 4; ++g) out[106 + g] = uint8_t(b.scale_code[2 * g] | b.scale_code[2 * g + 1] << 4);
}

}  // namespace vkllm::gguf
