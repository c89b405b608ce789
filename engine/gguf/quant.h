// Tensor element formats: fp16/bf16 conversion and the ggml block quantizations on the CPU.
// Block layouts follow ggml (ggml-common.h); the CPU versions here are the reference that the
// GPU dequantizing kernels are tested against.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include "gguf/gguf.h"

namespace vkllm::gguf {

// A tensor type the requested operation does not support (message names type and operation).
struct UnsupportedType : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// IEEE 754 binary16 -> binary32 (exact).
inline float fp16_to_fp32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    const uint32_t exp = (h >> 10) & 0x1f;
    const uint32_t mant = h & 0x3ff;
    if (exp == 0) {  // zero or subnormal: mant * 2^-24
        const float v = float(mant) * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf / nan
    return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));       // rebias 15 -> 127
}

// binary32 -> binary16, round to nearest even; overflow gives inf, NaN stays NaN.
inline uint16_t fp32_to_fp16(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    const uint16_t sign = uint16_t((x >> 16) & 0x8000);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return uint16_t(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 | ((ax >> 13) & 0x3ff) : 0));
    if (ax >= 0x47800000u) return uint16_t(sign | 0x7c00);  // >= 65536: inf
    if (ax < 0x38800000u) {                                  // below 2^-14: half subnormal, units of 2^-24
        const uint32_t e = ax >> 23;
        if (e < 102) return sign;  // below 2^-25: rounds to zero
        const uint32_t mant = (ax & 0x7fffff) | 0x800000;
        const uint32_t shift = 126 - e;  // 14..24
        uint32_t q = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) ++q;
        return uint16_t(sign | q);
    }
    uint32_t h = (ax - 0x38000000u) >> 13;  // rebias 127 -> 15, drop 13 mantissa bits
    const uint32_t rem = ax & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // a carry into the exponent is correct (up to inf)
    return uint16_t(sign | h);
}

inline float bf16_to_fp32(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

// binary32 -> bfloat16, round to nearest even; NaN stays (quiet) NaN.
inline uint16_t fp32_to_bf16(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);
    return uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

// Bytes taken by `n` elements of type `t`. Throws UnsupportedType for an unknown type and
// std::invalid_argument when n is not a multiple of the block size.
size_t row_size(TensorType t, size_t n);

// Decode `n` elements (a multiple of the block size) from `src` in `t`'s layout.
// Throws UnsupportedType when the CPU cannot decode `t`.
void dequantize_row(TensorType t, const uint8_t* src, float* dst, size_t n);

// Encode `n` elements (a multiple of the block size) into `dst` (row_size(t, n) bytes) in ggml's
// block layouts. Supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K,
// Q6_K, MXFP4, the i-quants IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ4_NL, IQ4_XS
// (llama.cpp's search-based methods) and the ternary TQ1_0, TQ2_0 (docs/quantize.md). Others
// (Q8_K, Q8_1, integer types) throw UnsupportedType.
//
// `importance`: empty, or one non-negative weight per element of the row (size n): how much an
// error on that column costs (an importance matrix's row for this tensor, as `llama-imatrix`
// computes). The search-based encoders minimise the error weighted by it; empty gives each
// type's default weighting (llama.cpp's, where it has one). F32/F16/BF16 ignore it.
void quantize_row(TensorType t, const float* src, uint8_t* dst, size_t n, std::span<const float> importance = {});
bool can_quantize(TensorType t);

// Whole-buffer conveniences. `n` must be a multiple of the block size.
// `importance` (if not empty) holds one weight per column: its size is the row length, `n` must
// be a whole number of rows and the row length a multiple of the block size; every row uses it.
std::vector<uint8_t> quantize(TensorType t, const float* src, size_t n, std::span<const float> importance = {});
std::vector<float> dequantize(TensorType t, const uint8_t* src, size_t n);

// All elements of a tensor from a File, as F32 in ggml order ([n_rows][row_length]).
std::vector<float> dequantize_tensor(const TensorInfo& tensor);

}  // namespace vkllm::gguf
