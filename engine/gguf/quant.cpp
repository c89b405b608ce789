// Decoding of ggml's block formats (layouts from ggml-common.h, one block at a time).
// Multi-byte fields are read with memcpy: blocks can sit at any byte offset (MXFP4 is 17 bytes).
#include "gguf/quant.h"

#include <cstring>
#include <string>

#include "gguf/quant_blocks.h"

namespace vkllm::gguf {

namespace {

void decode_q4_0(const uint8_t* b, float* y) {
    const float d = half_at(b);
    const uint8_t* qs = b + 2;  // [16] low nibble: elements 0..15, high nibble: 16..31
    for (int j = 0; j < 16; ++j) {
        y[j] = float((qs[j] & 0xF) - 8) * d;
        y[j + 16] = float((qs[j] >> 4) - 8) * d;
    }
}

void decode_q4_1(const uint8_t* b, float* y) {
    const float d = half_at(b), m = half_at(b + 2);
    const uint8_t* qs = b + 4;
    for (int j = 0; j < 16; ++j) {
        y[j] = float(qs[j] & 0xF) * d + m;
        y[j + 16] = float(qs[j] >> 4) * d + m;
    }
}

void decode_q5_0(const uint8_t* b, float* y) {
    const float d = half_at(b);
    const uint32_t qh = u32_at(b + 2);  // bit j: 5th bit of element j
    const uint8_t* qs = b + 6;
    for (int j = 0; j < 16; ++j) {
        const int lo = (qs[j] & 0xF) | int(((qh >> j) & 1) << 4);
        const int hi = (qs[j] >> 4) | int(((qh >> (j + 16)) & 1) << 4);
        y[j] = float(lo - 16) * d;
        y[j + 16] = float(hi - 16) * d;
    }
}

void decode_q5_1(const uint8_t* b, float* y) {
    const float d = half_at(b), m = half_at(b + 2);
    const uint32_t qh = u32_at(b + 4);
    const uint8_t* qs = b + 8;
    for (int j = 0; j < 16; ++j) {
        const int lo = (qs[j] & 0xF) | int(((qh >> j) & 1) << 4);
        const int hi = (qs[j] >> 4) | int(((qh >> (j + 16)) & 1) << 4);
        y[j] = float(lo) * d + m;
        y[j + 16] = float(hi) * d + m;
    }
}

void decode_q8_0(const uint8_t* b, float* y) {
    const float d = half_at(b);
    for (int j = 0; j < 32; ++j) y[j] = float(int8_t(b[2 + j])) * d;
}

void decode_mxfp4(const uint8_t* b, float* y) {
    const float d = e8m0_half_to_fp32(b[0]);
    const uint8_t* qs = b + 1;
    for (int j = 0; j < 16; ++j) {
        y[j] = float(kMxfp4Values[qs[j] & 0xF]) * d;
        y[j + 16] = float(kMxfp4Values[qs[j] >> 4]) * d;
    }
}

// Q2_K and Q3_K share the 2-bit layout: element i of a 256-block lives in qs[32*(i/128) + i%32]
// at bit 2*((i%128)/32).
inline int two_bits(const uint8_t* qs, int i) { return (qs[32 * (i / 128) + i % 32] >> (2 * ((i % 128) / 32))) & 3; }

void decode_q2_k(const uint8_t* b, float* y) {
    const uint8_t* scales = b;  // [16] low nibble: scale, high nibble: min, one per 16 elements
    const uint8_t* qs = b + 16;
    const float d = half_at(b + 80), dmin = half_at(b + 82);
    for (int g = 0; g < 16; ++g) {
        const float dl = d * float(scales[g] & 0xF), ml = dmin * float(scales[g] >> 4);
        for (int i = 16 * g; i < 16 * g + 16; ++i) y[i] = dl * float(two_bits(qs, i)) - ml;
    }
}

void decode_q3_k(const uint8_t* b, float* y) {
    const uint8_t* hmask = b;  // [32] bit (i/32) of hmask[i%32]: high bit of element i
    const uint8_t* qs = b + 32;
    const float d = half_at(b + 108);
    for (int g = 0; g < 16; ++g) {
        const float dl = d * float(q3k_scale(b + 96, g) - 32);
        for (int i = 16 * g; i < 16 * g + 16; ++i) {
            const int high = (hmask[i % 32] >> (i / 32)) & 1;
            y[i] = dl * float(two_bits(qs, i) - (high ? 0 : 4));
        }
    }
}

// Q4_K / Q5_K: element i sits in qs[32*(i/64) + i%32], low nibble when (i%64) < 32.
void decode_q4_k(const uint8_t* b, float* y) {
    const float d = half_at(b), dmin = half_at(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* qs = b + 16;
    for (int s = 0; s < 8; ++s) {  // 8 sub-blocks of 32
        uint8_t sc, m;
        k4_scale_min(scales, s, &sc, &m);
        const float dl = d * sc, ml = dmin * m;
        const uint8_t* q = qs + 32 * (s / 2);
        const int shift = 4 * (s % 2);
        for (int l = 0; l < 32; ++l) y[32 * s + l] = dl * float((q[l] >> shift) & 0xF) - ml;
    }
}

void decode_q5_k(const uint8_t* b, float* y) {
    const float d = half_at(b), dmin = half_at(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* qh = b + 16;  // [32] bit s of qh[l]: 5th bit of element 32*s + l
    const uint8_t* qs = b + 48;
    for (int s = 0; s < 8; ++s) {
        uint8_t sc, m;
        k4_scale_min(scales, s, &sc, &m);
        const float dl = d * sc, ml = dmin * m;
        const uint8_t* q = qs + 32 * (s / 2);
        const int shift = 4 * (s % 2);
        for (int l = 0; l < 32; ++l) {
            const int v = ((q[l] >> shift) & 0xF) | (((qh[l] >> s) & 1) << 4);
            y[32 * s + l] = dl * float(v) - ml;
        }
    }
}

// Q6_K: per half (128 elements) h, element 32*k + l (k in 0..3) has its low nibble in
// ql[64h + l + 32*(k%2)] (nibble k/2) and its top 2 bits in qh[32h + l] at bit 2k.
void decode_q6_k(const uint8_t* b, float* y) {
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192);  // [16] one per 16 elements
    const float d = half_at(b + 208);
    for (int h = 0; h < 2; ++h) {
        for (int k = 0; k < 4; ++k) {
            for (int l = 0; l < 32; ++l) {
                const int i = 128 * h + 32 * k + l;
                const int low = (ql[64 * h + l + 32 * (k % 2)] >> (4 * (k / 2))) & 0xF;
                const int high = (qh[32 * h + l] >> (2 * k)) & 3;
                y[i] = d * float(scales[i / 16]) * float((low | (high << 4)) - 32);
            }
        }
    }
}

BlockDecoder block_decoder(TensorType t) {
    switch (t) {
        case TensorType::Q4_0: return decode_q4_0;
        case TensorType::Q4_1: return decode_q4_1;
        case TensorType::Q5_0: return decode_q5_0;
        case TensorType::Q5_1: return decode_q5_1;
        case TensorType::Q8_0: return decode_q8_0;
        case TensorType::Q2_K: return decode_q2_k;
        case TensorType::Q3_K: return decode_q3_k;
        case TensorType::Q4_K: return decode_q4_k;
        case TensorType::Q5_K: return decode_q5_k;
        case TensorType::Q6_K: return decode_q6_k;
        case TensorType::MXFP4: return decode_mxfp4;
        default: return iquant_block_decoder(t);
    }
}

}  // namespace

std::string type_display_name(TensorType t) {
    auto tr = type_traits(t);
    return tr ? std::string(tr->name) : "type " + std::to_string(static_cast<uint32_t>(t));
}

TypeTraits checked_traits(TensorType t, size_t n, const char* operation) {
    auto tr = type_traits(t);
    if (!tr) throw UnsupportedType(std::string(operation) + ": unknown tensor type " + std::to_string(static_cast<uint32_t>(t)));
    if (n % tr->block_size != 0)
        throw std::invalid_argument(std::string(operation) + ": " + std::to_string(n) + " elements is not a multiple of the " +
                                    tr->name + " block size " + std::to_string(tr->block_size));
    return *tr;
}

size_t row_size(TensorType t, size_t n) {
    TypeTraits tr = checked_traits(t, n, "row_size");
    return n / tr.block_size * tr.type_size;
}

void dequantize_row(TensorType t, const uint8_t* src, float* dst, size_t n) {
    TypeTraits tr = checked_traits(t, n, "dequantize_row");
    switch (t) {
        case TensorType::F32: std::memcpy(dst, src, n * sizeof(float)); return;
        case TensorType::F16:
            for (size_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(u16_at(src + 2 * i));
            return;
        case TensorType::BF16:
            for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(u16_at(src + 2 * i));
            return;
        default: break;
    }
    BlockDecoder decode = block_decoder(t);
    if (!decode) throw UnsupportedType("dequantize_row: the CPU cannot decode " + type_display_name(t) + " tensors");
    for (size_t blk = 0; blk < n / tr.block_size; ++blk) decode(src + blk * tr.type_size, dst + blk * tr.block_size);
}

std::vector<float> dequantize(TensorType t, const uint8_t* src, size_t n) {
    std::vector<float> out(n);
    dequantize_row(t, src, out.data(), n);
    return out;
}

std::vector<float> dequantize_tensor(const TensorInfo& tensor) {
    if (!tensor.data) throw std::invalid_argument("dequantize_tensor: tensor '" + tensor.name + "' has no data");
    try {
        return dequantize(tensor.type, tensor.data, tensor.n_elements());
    } catch (const UnsupportedType&) {
        throw UnsupportedType("tensor '" + tensor.name + "': the CPU cannot decode " + type_display_name(tensor.type) +
                              " tensors (supported: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K MXFP4 IQ1_S IQ1_M "
                              "IQ2_XXS IQ2_XS IQ2_S IQ3_XXS IQ3_S IQ4_NL IQ4_XS TQ1_0 TQ2_0)");
    }
}

}  // namespace vkllm::gguf
