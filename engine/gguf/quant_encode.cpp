// Encoders for ggml's 32-element and K-quant block formats.
// Without an importance vector: the 32-element formats are ggml's reference quantizers exactly
// (round-to-nearest with ggml's block scales); the K-quants search each group's scale (and
// minimum) as ggml's reference quantizers do (make_qkx2_quants, make_qx_quants, make_q3_quants),
// weighting the squared error with llama.cpp's default weights (kquant_default_weights).
// With one: each group's scale (and minimum) is searched to minimise the importance-weighted
// squared error (quant_weighted_fit.h), as llama.cpp does when given an importance matrix;
// Q8_0 and MXFP4 ignore it, as llama.cpp does.
// Either way every scale is rounded to its stored precision (fp16, 6-bit, ...) before the
// elements are quantized against it.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "gguf/quant.h"
#include "gguf/quant_blocks.h"
#include "gguf/quant_weighted_fit.h"

namespace vkllm::gguf {

namespace {

int nearest(float x) { return int(std::lrintf(x)); }
int clampi(int v, int lo, int hi) { return std::min(hi, std::max(lo, v)); }
float stored_half(float v) { return fp16_to_fp32(fp32_to_fp16(v)); }

// The element with the largest magnitude, sign kept (symmetric formats map it to -2^(bits-1)).
float signed_absmax(const float* x, int n) {
    float best = 0.0f, amax = 0.0f;
    for (int i = 0; i < n; ++i)
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            best = x[i];
        }
    return best;
}

// Error weights of a block when an importance vector is given (get() is nullptr otherwise):
// importance * sqrt(sigma2 + x^2) with sigma2 = sigma_factor * mean(x^2) over the block.
template <int N>
struct ErrorWeights {
    float w[N];
    bool given;
    ErrorWeights(const float* x, const float* importance, float sigma_factor) : given(importance != nullptr) {
        if (given) importance_weights(x, importance, N, sigma_factor * mean_square(x, N), w);
    }
    const float* get() const { return given ? w : nullptr; }
};

// The 32-element formats follow ggml's reference quantizers exactly (same scale, same rounding),
// so that re-quantizing an F32 model gives the bytes llama-quantize writes.

// Symmetric: the element of largest magnitude maps to code 0 (value -half_range * d).
// codes[i] = min(2*half_range - 1, trunc(x/d + half_range + 0.5)).
// With error weights `w`: the weighted best scale, codes rounded to nearest against it.
void symmetric_codes(const float* x, const float* w, int n, int half_range, uint8_t* d_out, int* codes) {
    if (w) {
        put_half(d_out, fit_symmetric(x, w, n, half_range));
        const float d = half_at(d_out), id = d != 0.0f ? 1.0f / d : 0.0f;
        for (int i = 0; i < n; ++i) codes[i] = clampi(nearest(x[i] * id), -half_range, half_range - 1) + half_range;
        return;
    }
    const float d = signed_absmax(x, n) / float(-half_range);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_half(d_out, d);
    for (int i = 0; i < n; ++i)
        codes[i] = clampi(int(x[i] * id + float(half_range) + 0.5f), 0, 2 * half_range - 1);
}

// Affine: value = q * d + m with m the block minimum, q in [0, levels-1].
// With error weights `w`: the weighted best scale and minimum.
void affine_codes(const float* x, const float* w, int n, int levels, uint8_t* d_out, uint8_t* m_out, int* codes) {
    if (w) {
        float min;
        put_half(d_out, fit_affine(x, w, n, levels - 1, &min));
        put_half(m_out, -min);
        const float d = half_at(d_out), m = half_at(m_out), id = d != 0.0f ? 1.0f / d : 0.0f;
        for (int i = 0; i < n; ++i) codes[i] = clampi(nearest((x[i] - m) * id), 0, levels - 1);
        return;
    }
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (int i = 0; i < n; ++i) {
        lo = std::min(lo, x[i]);
        hi = std::max(hi, x[i]);
    }
    const float d = (hi - lo) / float(levels - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_half(d_out, d);
    put_half(m_out, lo);
    for (int i = 0; i < n; ++i) codes[i] = clampi(int((x[i] - lo) * id + 0.5f), 0, levels - 1);
}

void encode_q4_0(const float* x, const float* importance, uint8_t* b) {
    int q[32];
    const ErrorWeights<32> w(x, importance, 1.0f);
    symmetric_codes(x, w.get(), 32, 8, b, q);
    for (int j = 0; j < 16; ++j) b[2 + j] = uint8_t(q[j] | (q[j + 16] << 4));
}

void encode_q4_1(const float* x, const float* importance, uint8_t* b) {
    int q[32];
    const ErrorWeights<32> w(x, importance, 1.0f);
    affine_codes(x, w.get(), 32, 16, b, b + 2, q);
    for (int j = 0; j < 16; ++j) b[4 + j] = uint8_t(q[j] | (q[j + 16] << 4));
}

void pack_5bit(const int* q, uint8_t* qh_out, uint8_t* qs) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
        qs[j] = uint8_t((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
        qh |= uint32_t(q[j] >> 4) << j;
        qh |= uint32_t(q[j + 16] >> 4) << (j + 16);
    }
    std::memcpy(qh_out, &qh, 4);
}

void encode_q5_0(const float* x, const float* importance, uint8_t* b) {
    int q[32];
    const ErrorWeights<32> w(x, importance, 1.0f);
    symmetric_codes(x, w.get(), 32, 16, b, q);
    pack_5bit(q, b + 2, b + 6);
}

void encode_q5_1(const float* x, const float* importance, uint8_t* b) {
    int q[32];
    const ErrorWeights<32> w(x, importance, 1.0f);
    affine_codes(x, w.get(), 32, 32, b, b + 2, q);
    pack_5bit(q, b + 4, b + 8);
}

void encode_q8_0(const float* x, const float* /*importance*/, uint8_t* b) {
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_half(b, d);
    for (int i = 0; i < 32; ++i) b[2 + i] = uint8_t(int8_t(clampi(int(std::round(x[i] * id)), -127, 127)));
}

void encode_mxfp4(const float* x, const float* /*importance*/, uint8_t* b) {
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
    // Shared exponent: the largest element lands in the top E2M1 binade (|value| up to 6 = 12/2).
    const int e = amax > 0.0f ? clampi(int(std::floor(std::log2(amax))) - 2 + 127, 0, 254) : 0;
    b[0] = uint8_t(e);
    const float d = e8m0_half_to_fp32(uint8_t(e));
    for (int j = 0; j < 32; ++j) {
        int best = 0;
        float best_err = FLT_MAX;
        for (int k = 0; k < 16; ++k) {
            const float err = std::fabs(float(kMxfp4Values[k]) * d - x[j]);
            if (err < best_err) {
                best_err = err;
                best = k;
            }
        }
        if (j < 16) b[1 + j] = uint8_t(best);
        else b[1 + j - 16] |= uint8_t(best << 4);
    }
}

// Packs 2-bit codes in the Q2_K/Q3_K order: element i -> qs[32*(i/128) + i%32], bit 2*((i%128)/32).
void pack_2bit(const int* q, uint8_t* qs) {
    std::memset(qs, 0, 64);
    for (int i = 0; i < 256; ++i) qs[32 * (i / 128) + i % 32] |= uint8_t((q[i] & 3) << (2 * ((i % 128) / 32)));
}

// The error weights ggml's reference K-quant quantizers give a group's scale search when no
// importance vector is given: x^2 (Q3_K's make_q3_quants and Q6_K's make_qx_quants, rmse_type 1),
// the group's RMS plus |x| (Q4_K, Q5_K: make_qkx2_quants' av_x + |x|), |x| (Q2_K).
enum class KquantWeighting { Square, RmsPlusAbs, Abs };
void kquant_default_weights(const float* x, int n, KquantWeighting k, float* w) {
    const float rms = k == KquantWeighting::RmsPlusAbs ? std::sqrt(mean_square(x, n)) : 0.0f;
    for (int i = 0; i < n; ++i)
        w[i] = k == KquantWeighting::Square ? x[i] * x[i] : k == KquantWeighting::Abs ? std::fabs(x[i]) : rms + std::fabs(x[i]);
}

// A block's error weights: the importance vector's (ErrorWeights) or, without one, ggml's
// defaults group by group.
template <int N>
struct KquantWeights {
    float w[N];
    KquantWeights(const float* x, const float* importance, float sigma_factor, int group, KquantWeighting k) {
        if (importance) importance_weights(x, importance, N, sigma_factor * mean_square(x, N), w);
        else
            for (int g = 0; g < N; g += group) kquant_default_weights(x + g, group, k, w + g);
    }
};

void encode_q2_k(const float* x, const float* importance, uint8_t* b) {
    float scales[16], mins[16], max_scale = 0.0f, max_min = 0.0f;
    const KquantWeights<256> w(x, importance, 1.0f, 16, KquantWeighting::Abs);
    for (int g = 0; g < 16; ++g) {
        scales[g] = fit_affine(x + 16 * g, w.w + 16 * g, 16, 3, &mins[g]);
        max_scale = std::max(max_scale, scales[g]);
        max_min = std::max(max_min, mins[g]);
    }
    // 4-bit group scales and mins against fp16 super-scales.
    const float d = stored_half(max_scale / 15.0f), dmin = stored_half(max_min / 15.0f);
    put_half(b + 80, d);
    put_half(b + 82, dmin);
    int q[256];
    for (int g = 0; g < 16; ++g) {
        const int ls = d > 0 ? clampi(nearest(scales[g] / d), 0, 15) : 0;
        const int lm = dmin > 0 ? clampi(nearest(mins[g] / dmin), 0, 15) : 0;
        b[g] = uint8_t(ls | (lm << 4));
        const float dl = d * ls, ml = dmin * lm;
        for (int i = 16 * g; i < 16 * g + 16; ++i) q[i] = dl > 0 ? clampi(nearest((x[i] + ml) / dl), 0, 3) : 0;
    }
    pack_2bit(q, b + 16);
}

void encode_q3_k(const float* x, const float* importance, uint8_t* b) {
    // Signed group scales (q in [-4, 3]), then 6-bit signed scales against one fp16 super-scale.
    float scales[16], max_scale = 0.0f;
    const KquantWeights<256> w(x, importance, 2.0f, 16, KquantWeighting::Square);
    for (int g = 0; g < 16; ++g) {
        scales[g] = fit_symmetric(x + 16 * g, w.w + 16 * g, 16, 4);
        if (std::fabs(scales[g]) > std::fabs(max_scale)) max_scale = scales[g];
    }
    uint8_t* packed = b + 96;
    std::memset(packed, 0, 12);
    const float d = max_scale != 0.0f ? stored_half(max_scale / -32.0f) : 0.0f;
    put_half(b + 108, d);
    int q[256];
    for (int g = 0; g < 16; ++g) {
        const int ls = d != 0.0f ? clampi(nearest(scales[g] / d), -32, 31) + 32 : 32;
        packed[g % 8] |= uint8_t((ls & 0xF) << (4 * (g / 8)));
        packed[8 + g % 4] |= uint8_t((ls >> 4) << (2 * (g / 4)));
        const float dl = d * float(ls - 32);
        for (int i = 16 * g; i < 16 * g + 16; ++i) q[i] = (dl != 0.0f ? clampi(nearest(x[i] / dl), -4, 3) : 0) + 4;
    }
    std::memset(b, 0, 32);  // hmask: bit (i/32) of byte i%32 is bit 2 of code i
    for (int i = 0; i < 256; ++i)
        if (q[i] & 4) b[i % 32] |= uint8_t(1 << (i / 32));
    pack_2bit(q, b + 32);
}

// Shared by Q4_K (16 levels) and Q5_K (32 levels): eight groups of 32 with 6-bit scale and min.
void encode_k_affine(const float* x, const float* importance, uint8_t* b, int levels, int* q) {
    float scales[8], mins[8], max_scale = 0.0f, max_min = 0.0f;
    const KquantWeights<256> w(x, importance, 2.0f, 32, KquantWeighting::RmsPlusAbs);
    for (int s = 0; s < 8; ++s) {
        scales[s] = fit_affine(x + 32 * s, w.w + 32 * s, 32, levels - 1, &mins[s]);
        max_scale = std::max(max_scale, scales[s]);
        max_min = std::max(max_min, mins[s]);
    }
    const float d = stored_half(max_scale / 63.0f), dmin = stored_half(max_min / 63.0f);
    put_half(b, d);
    put_half(b + 2, dmin);
    uint8_t* packed = b + 4;
    std::memset(packed, 0, 12);
    for (int s = 0; s < 8; ++s) {
        const int ls = d > 0 ? clampi(nearest(scales[s] / d), 0, 63) : 0;
        const int lm = dmin > 0 ? clampi(nearest(mins[s] / dmin), 0, 63) : 0;
        if (s < 4) {
            packed[s] |= uint8_t(ls);
            packed[s + 4] |= uint8_t(lm);
        } else {  // low 4 bits in byte s+4, high 2 bits in the top of bytes s-4 (scale) and s (min)
            packed[s + 4] = uint8_t((ls & 0xF) | ((lm & 0xF) << 4));
            packed[s - 4] |= uint8_t((ls >> 4) << 6);
            packed[s] |= uint8_t((lm >> 4) << 6);
        }
        const float dl = d * ls, ml = dmin * lm;
        for (int i = 32 * s; i < 32 * s + 32; ++i) q[i] = dl > 0 ? clampi(nearest((x[i] + ml) / dl), 0, levels - 1) : 0;
    }
}

void encode_q4_k(const float* x, const float* importance, uint8_t* b) {
    int q[256];
    encode_k_affine(x, importance, b, 16, q);
    uint8_t* qs = b + 16;  // element i -> qs[32*(i/64) + i%32], high nibble when i%64 >= 32
    for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) qs[32 * c + l] = uint8_t(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
}

void encode_q5_k(const float* x, const float* importance, uint8_t* b) {
    int q[256];
    encode_k_affine(x, importance, b, 32, q);
    uint8_t* qh = b + 16;
    uint8_t* qs = b + 48;
    std::memset(qh, 0, 32);
    for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l)
            qs[32 * c + l] = uint8_t((q[64 * c + l] & 0xF) | ((q[64 * c + 32 + l] & 0xF) << 4));
    for (int i = 0; i < 256; ++i) qh[i % 32] |= uint8_t((q[i] >> 4) << (i / 32));
}

void encode_q6_k(const float* x, const float* importance, uint8_t* b) {
    // Signed group scales (q in [-32, 31]) stored as int8 against one fp16 super-scale. With an
    // importance vector, the scales are fitted to it directly (llama.cpp weighs Q6_K so).
    float scales[16], max_scale = 0.0f, w[16];
    for (int g = 0; g < 16; ++g) {
        if (!importance) kquant_default_weights(x + 16 * g, 16, KquantWeighting::Square, w);
        scales[g] = fit_symmetric(x + 16 * g, importance ? importance + 16 * g : w, 16, 32);
        if (std::fabs(scales[g]) > std::fabs(max_scale)) max_scale = scales[g];
    }
    const float d = max_scale != 0.0f ? stored_half(max_scale / -128.0f) : 0.0f;
    put_half(b + 208, d);
    int q[256];
    for (int g = 0; g < 16; ++g) {
        const int ls = d != 0.0f ? clampi(nearest(scales[g] / d), -128, 127) : 0;
        b[192 + g] = uint8_t(int8_t(ls));
        const float dl = d * float(ls);
        for (int i = 16 * g; i < 16 * g + 16; ++i) q[i] = (dl != 0.0f ? clampi(nearest(x[i] / dl), -32, 31) : 0) + 32;
    }
    uint8_t* ql = b;
    uint8_t* qh = b + 128;
    std::memset(b, 0, 192);
    for (int i = 0; i < 256; ++i) {  // see decode_q6_k for the layout
        const int h = i / 128, k = (i % 128) / 32, l = i % 32;
        ql[64 * h + l + 32 * (k % 2)] |= uint8_t((q[i] & 0xF) << (4 * (k / 2)));
        qh[32 * h + l] |= uint8_t((q[i] >> 4) << (2 * k));
    }
}

BlockEncoder block_encoder(TensorType t) {
    switch (t) {
        case TensorType::Q4_0: return encode_q4_0;
        case TensorType::Q4_1: return encode_q4_1;
        case TensorType::Q5_0: return encode_q5_0;
        case TensorType::Q5_1: return encode_q5_1;
        case TensorType::Q8_0: return encode_q8_0;
        case TensorType::Q2_K: return encode_q2_k;
        case TensorType::Q3_K: return encode_q3_k;
        case TensorType::Q4_K: return encode_q4_k;
        case TensorType::Q5_K: return encode_q5_k;
        case TensorType::Q6_K: return encode_q6_k;
        case TensorType::MXFP4: return encode_mxfp4;
        default: return iquant_block_encoder(t);
    }
}

// Encodes blocks [first, first + count) of a buffer whose rows share `importance` (one weight
// per column, empty for none): block b's weights start at column (b * block_size) % row length.
void encode_blocks(TensorType t, const TypeTraits& tr, const float* src, uint8_t* dst, size_t first, size_t count,
                   std::span<const float> importance) {
    BlockEncoder encode = block_encoder(t);
    if (!encode) throw UnsupportedType("quantize: cannot encode " + type_display_name(t) + " tensors");
    for (size_t blk = first; blk < first + count; ++blk) {
        const float* w = importance.empty() ? nullptr : importance.data() + (blk * tr.block_size) % importance.size();
        encode(src + blk * tr.block_size, w, dst + blk * tr.type_size);
    }
}

void check_importance(const TypeTraits& tr, size_t n, std::span<const float> importance) {
    if (importance.empty()) return;
    const size_t row = importance.size();
    if (row % tr.block_size != 0 || n % row != 0)
        throw std::invalid_argument("quantize: an importance vector of " + std::to_string(row) + " weights does not fit " +
                                    std::to_string(n) + " elements in " + tr.name + " blocks of " +
                                    std::to_string(tr.block_size) + " (it needs one weight per column of whole rows)");
    for (float w : importance)
        if (!(w >= 0.0f) || !std::isfinite(w))
            throw std::invalid_argument("quantize: importance weights must be finite and non-negative");
}

}  // namespace

bool can_quantize(TensorType t) {
    return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16 || block_encoder(t) != nullptr;
}

void quantize_row(TensorType t, const float* src, uint8_t* dst, size_t n, std::span<const float> importance) {
    TypeTraits tr = checked_traits(t, n, "quantize_row");
    switch (t) {
        case TensorType::F32: std::memcpy(dst, src, n * sizeof(float)); return;
        case TensorType::F16:
            for (size_t i = 0; i < n; ++i) {
                const uint16_t h = fp32_to_fp16(src[i]);
                std::memcpy(dst + 2 * i, &h, 2);
            }
            return;
        case TensorType::BF16:
            for (size_t i = 0; i < n; ++i) {
                const uint16_t h = fp32_to_bf16(src[i]);
                std::memcpy(dst + 2 * i, &h, 2);
            }
            return;
        default: break;
    }
    if (!importance.empty() && importance.size() != n)
        throw std::invalid_argument("quantize_row: " + std::to_string(importance.size()) + " importance weights for a row of " +
                                    std::to_string(n));
    check_importance(tr, n, importance);
    encode_blocks(t, tr, src, dst, 0, n / tr.block_size, importance);
}

std::vector<uint8_t> quantize(TensorType t, const float* src, size_t n, std::span<const float> importance) {
    std::vector<uint8_t> out(row_size(t, n));
    const TypeTraits tr = *type_traits(t);
    check_importance(tr, n, importance);
    // Blocks are encoded independently: a large tensor is cut into runs of whole blocks, one per
    // core (the bytes are the same for any split).
    const size_t block = tr.block_size, blocks = n / block;
    const size_t cores = std::max(1u, std::thread::hardware_concurrency());
    const size_t parts = std::min(cores, blocks / 256 + 1);
    if (block_encoder(t) == nullptr) {  // F32/F16/BF16 (no importance there), or a type that throws here
        quantize_row(t, src, out.data(), n);
        return out;
    }
    if (parts <= 1) {
        encode_blocks(t, tr, src, out.data(), 0, blocks, importance);
        return out;
    }
    const size_t per_part = (blocks + parts - 1) / parts;
    std::vector<std::thread> workers;
    for (size_t first = 0; first < blocks; first += per_part) {
        const size_t count = std::min(per_part, blocks - first);
        workers.emplace_back([&, first, count] { encode_blocks(t, tr, src, out.data(), first, count, importance); });
    }
    for (std::thread& w : workers) w.join();
    return out;
}

}  // namespace vkllm::gguf
