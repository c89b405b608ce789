// Internal helpers shared by the block encoders and decoders (not part of the public API).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>

#include "gguf/quant.h"

namespace vkllm::gguf {

inline uint16_t u16_at(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}
inline uint32_t u32_at(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}
inline float half_at(const uint8_t* p) { return fp16_to_fp32(u16_at(p)); }
inline void put_half(uint8_t* p, float v) {
    const uint16_t h = fp32_to_fp16(v);
    std::memcpy(p, &h, 2);
}

// MXFP4 element values (E2M1) doubled, so that they are integers; the block scale is halved to
// compensate (see e8m0_half_to_fp32).
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// E8M0 scale 2^(e-127), times 0.5. e = 0 and 1 give subnormal floats.
inline float e8m0_half_to_fp32(uint8_t e) {
    const uint32_t bits = e < 2 ? (0x00200000u << e) : (uint32_t(e - 1) << 23);
    return std::bit_cast<float>(bits);
}

// Q3_K: sixteen 6-bit scales packed in 12 bytes. The low 4 bits of scale g are nibble g/8 of
// byte g%8; the high 2 bits are bits 2*(g/4) of byte 8 + g%4. Stored with an offset of 32.
inline int q3k_scale(const uint8_t* s, int g) {
    const int low = (s[g % 8] >> (4 * (g / 8))) & 0xF;
    const int high = (s[8 + g % 4] >> (2 * (g / 4))) & 3;
    return low | (high << 4);
}

// Q4_K/Q5_K: eight 6-bit (scale, min) pairs packed in 12 bytes (ggml's get_scale_min_k4).
inline void k4_scale_min(const uint8_t* q, int j, uint8_t* sc, uint8_t* m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

// Decodes one block of a type into block_size floats.
using BlockDecoder = void (*)(const uint8_t*, float*);
// The i-quant and ternary types' decoders (quant_iq.cpp); nullptr for any other type.
BlockDecoder iquant_block_decoder(TensorType t);

// Encodes one block of block_size floats. `importance` is nullptr or the block's block_size
// weights (see quantize_row).
using BlockEncoder = void (*)(const float* x, const float* importance, uint8_t* out);
// The i-quant and ternary types' encoders (quant_iq_encode.cpp, quant_tq_encode.cpp); nullptr for
// any other type.
BlockEncoder iquant_block_encoder(TensorType t);

std::string type_display_name(TensorType t);
// Traits of `t`, checking that it is known and that n is a whole number of blocks.
TypeTraits checked_traits(TensorType t, size_t n, const char* operation);

}  // namespace vkllm::gguf
