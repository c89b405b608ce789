// Decoding of llama.cpp's i-quant and ternary block formats (layouts from ggml-common.h; the
// arithmetic in ggml's order, so that the values are bit for bit those of ggml and gguf-py).
//
// The IQ2/IQ3 types give each group of 4 or 8 weights a point of a grid (iq_grids.h) and signs;
// IQ1 grids carry their own signs plus a shift of +-1/8; IQ4 maps 4-bit codes through a fixed
// non-linear table; TQ1_0/TQ2_0 store ternary weights {-1, 0, +1} times one scale.
#include <cstring>

#include "gguf/iq_grids.h"
#include "gguf/quant_blocks.h"

namespace vkllm::gguf {

namespace {

inline float signed_if(bool negative, float v) { return negative ? -v : v; }

// ---- IQ4_NL and IQ4_XS: 4-bit indices into llama.cpp's kvalues_iq4nl (kIq4nlValues), low nibbles first ----

void decode_iq4_nl(const uint8_t* b, float* y) {
    const float d = half_at(b);
    const uint8_t* qs = b + 2;  // [16]
    for (int j = 0; j < 16; ++j) {
        y[j] = d * float(kIq4nlValues[qs[j] & 0xF]);
        y[j + 16] = d * float(kIq4nlValues[qs[j] >> 4]);
    }
}

// IQ4_XS: a 256-block of eight 32-element IQ4_NL-like sub-blocks, each with a 6-bit scale
// (low 4 bits in scales_l, high 2 in scales_h) offset by 32: d, scales_h (u16), scales_l[4], qs[128].
void decode_iq4_xs(const uint8_t* b, float* y) {
    const float d = half_at(b);
    const uint32_t scales_h = u16_at(b + 2);
    const uint8_t* scales_l = b + 4;
    const uint8_t* qs = b + 8;
    for (int ib = 0; ib < 8; ++ib) {
        const int ls = ((scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | int(((scales_h >> (2 * ib)) & 3) << 4);
        const float dl = d * float(ls - 32);
        for (int j = 0; j < 16; ++j) {
            y[32 * ib + j] = dl * float(kIq4nlValues[qs[16 * ib + j] & 0xF]);
            y[32 * ib + j + 16] = dl * float(kIq4nlValues[qs[16 * ib + j] >> 4]);
        }
    }
}

// ---- IQ2 and IQ3: grid magnitudes, a 4-bit scale per 16 or 32 weights, one sign bit each ----

// Eight weights from an 8-coordinate grid point, sign bit j of `signs` negating weight j.
inline void put_point8(const int8_t* point, float scale, uint32_t signs, float* y) {
    for (int j = 0; j < 8; ++j) y[j] = signed_if((signs >> j) & 1, scale * float(point[j]));
}

// IQ2_XXS: d, then per 32 weights two u32: four 8-bit grid indices; four 7-bit sign groups and a
// 4-bit scale in the top bits. Weight = d * (0.5 + scale) / 4 * magnitude.
void decode_iq2_xxs(const uint8_t* b, float* y) {
    const float d = half_at(b);
    const IqGrid& grid = iq_grid(IqGridId::IQ2_XXS);
    for (int ib = 0; ib < 8; ++ib, y += 32) {
        const uint8_t* idx = b + 2 + 8 * ib;
        const uint32_t aux = u32_at(idx + 4);
        const float db = d * (0.5f + float(aux >> 28)) * 0.25f;
        for (int l = 0; l < 4; ++l) put_point8(grid.point(idx[l]), db, iq_signs_from_7_bits(aux >> (7 * l)), y + 8 * l);
    }
}

// IQ2_XS: d, qs[32] u16 (9-bit grid index, 7-bit sign group), scales[8] (two 4-bit scales per 32).
void decode_iq2_xs(const uint8_t* b, float* y) {
    const float d = half_at(b);
    const uint8_t* scales = b + 66;
    const IqGrid& grid = iq_grid(IqGridId::IQ2_XS);
    for (int ib = 0; ib < 8; ++ib, y += 32) {
        const float db[2] = {d * (0.5f + float(scales[ib] & 0xF)) * 0.25f, d * (0.5f + float(scales[ib] >> 4)) * 0.25f};
        for (int l = 0; l < 4; ++l) {
            const uint32_t q = u16_at(b + 2 + 2 * (4 * ib + l));
            put_point8(grid.point(q & 511), db[l / 2], iq_signs_from_7_bits(q >> 9), y + 8 * l);
        }
    }
}

// IQ2_S: d, qs[32] (low 8 index bits), signs[32] (one bit per weight), qh[8] (2 high index bits
// per group of 8), scales[8] (two 4-bit scales per 32).
void decode_iq2_s(const uint8_t* b, float* y) {
    const float d = half_at(b);
    const uint8_t* qs = b + 2;
    const uint8_t* signs = b + 34;
    const uint8_t* qh = b + 66;
    const uint8_t* scales = b + 74;
    const IqGrid& grid = iq_grid(IqGridId::IQ2_S);
    for (int ib = 0; ib < 8; ++ib, y += 32) {
        const float db[2] = {d * (0.5f + float(scales[ib] & 0xF)) * 0.25f, d * (0.5f + float(scales[ib] >> 4)) * 0.25f};
        for (int l = 0; l < 4; ++l) {
            const uint32_t index = qs[4 * ib + l] | ((uint32_t(qh[ib]) >> (2 * l) & 3) << 8);
            put_point8(grid.point(index), db[l / 2], signs[4 * ib + l], y + 8 * l);
        }
    }
}

// IQ3_XXS: d, qs[64] 8-bit indices into a 4-coordinate grid (two per 8 weights), then per 32
// weights a u32 of four 7-bit sign groups and a 4-bit scale. Weight = d * (0.5 + scale) / 2 * magnitude.
void decode_iq3_xxs(const uint8_t* b, float* y) {
    const float d = half_at(b);
    const uint8_t* qs = b + 2;
    const IqGrid& grid = iq_grid(IqGridId::IQ3_XXS);
    for (int ib = 0; ib < 8; ++ib, y += 32) {
        const uint32_t aux = u32_at(b + 66 + 4 * ib);
        const float db = d * (0.5f + float(aux >> 28)) * 0.5f;
        for (int l = 0; l < 4; ++l) {
            const uint32_t signs = iq_signs_from_7_bits(aux >> (7 * l));
            const int8_t* p0 = grid.point(qs[8 * ib + 2 * l]);
            const int8_t* p1 = grid.point(qs[8 * ib + 2 * l + 1]);
            for (int j = 0; j < 4; ++j) {
                y[8 * l + j] = signed_if((signs >> j) & 1, db * float(p0[j]));
                y[8 * l + j + 4] = signed_if((signs >> (j + 4)) & 1, db * float(p1[j]));
            }
        }
    }
}

// IQ3_S: d, qs[64] (low 8 index bits), qh[8] (the 9th bit of each of a 32's eight indices),
// signs[32] (one bit per weight), scales[4] (two 4-bit scales per 64). Weight = d * (1 + 2 scale) * magnitude.
void decode_iq3_s(const uint8_t* b, float* y) {
    const float d = half_at(b);
    const uint8_t* qs = b + 2;
    const uint8_t* qh = b + 66;
    const uint8_t* signs = b + 74;
    const uint8_t* scales = b + 106;
    const IqGrid& grid = iq_grid(IqGridId::IQ3_S);
    for (int ib = 0; ib < 8; ++ib, y += 32) {
        const float db = d * float(1 + 2 * ((scales[ib / 2] >> (4 * (ib % 2))) & 0xF));
        for (int k = 0; k < 8; ++k) {  // 8 points of 4 per 32 weights
            const uint32_t index = qs[8 * ib + k] | ((uint32_t(qh[ib]) >> k & 1) << 8);
            const int8_t* p = grid.point(index);
            const uint32_t s = signs[4 * ib + k / 2] >> (4 * (k % 2));
            for (int j = 0; j < 4; ++j) y[4 * k + j] = signed_if((s >> j) & 1, db * float(p[j]));
        }
    }
}

// ---- IQ1: ternary grid points shifted by +-1/8, times an odd 3-bit scale ----

constexpr float kIq1Delta = 0.125f;

// Eight weights from an IQ1 grid point: scale * (coordinate + delta).
inline void put_iq1_point(const int8_t* point, float scale, float delta, float* y) {
    for (int j = 0; j < 8; ++j) y[j] = scale * (float(point[j]) + delta);
}

// IQ1_S: d, qs[32] (low 8 index bits), qh[8] u16 per 32 weights: four 3-bit high index parts,
// a 3-bit scale (bits 12-14) and the delta's sign (bit 15).
void decode_iq1_s(const uint8_t* b, float* y) {
    const float d = half_at(b);
    const uint8_t* qs = b + 2;
    const IqGrid& grid = iq_grid(IqGridId::IQ1_S);
    for (int ib = 0; ib < 8; ++ib, y += 32) {
        const uint32_t qh = u16_at(b + 34 + 2 * ib);
        const float dl = d * float(2 * ((qh >> 12) & 7) + 1);
        const float delta = qh & 0x8000 ? -kIq1Delta : kIq1Delta;
        for (int l = 0; l < 4; ++l) put_iq1_point(grid.point(qs[4 * ib + l] | ((qh >> (3 * l)) & 7) << 8), dl, delta, y + 8 * l);
    }
}

// IQ1_M: qs[32] (low 8 index bits), qh[16] (per group of 8: 3 high index bits and the delta's sign,
// one nibble each), scales[8] as four u16: a 3-bit scale per 16 weights in bits 0-11, and the fp16
// block scale d spread over their top nibbles.
void decode_iq1_m(const uint8_t* b, float* y) {
    const uint8_t* qs = b;
    const uint8_t* qh = b + 32;
    uint16_t sc[4];
    std::memcpy(sc, b + 48, sizeof(sc));
    const float d = fp16_to_fp32(uint16_t((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000)));
    const IqGrid& grid = iq_grid(IqGridId::IQ1_S);
    for (int ib = 0; ib < 8; ++ib, y += 32) {
        for (int l = 0; l < 4; ++l) {  // 8 weights each; weights 0-15 take the first scale, 16-31 the second
            const float dl = d * float(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3 * (l / 2))) & 7) + 1);
            const uint32_t nibble = qh[2 * ib + l / 2] >> (4 * (l % 2)) & 0xF;
            const float delta = nibble & 8 ? -kIq1Delta : kIq1Delta;
            put_iq1_point(grid.point(qs[4 * ib + l] | (nibble & 7) << 8), dl, delta, y + 8 * l);
        }
    }
}

// ---- Ternary: weights (q - 1) * d, q in {0, 1, 2} ----

// TQ1_0: qs[48] five trits per byte, qh[4] four trits per byte, d. A byte holds its trits as the
// fraction byte/256 ~ 0.t1t2t3t4t5 in base 3: trit n is the integer part of 3 * (byte * 3^n mod 256) / 256.
// Weights: trit n of qs[m] for m < 32 is weight 32n + m; of qs[32 + m] (m < 16), 160 + 16n + m;
// of qh[m], 240 + 4n + m.
inline int trit(uint8_t byte, int n) {
    constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
    const uint8_t q = uint8_t(byte * kPow3[n]);  // mod 256
    return (int(q) * 3) >> 8;
}

void decode_tq1_0(const uint8_t* b, float* y) {
    const uint8_t* qs = b;
    const uint8_t* qh = b + 48;
    const float d = half_at(b + 52);
    for (int n = 0; n < 5; ++n)
        for (int m = 0; m < 32; ++m) y[32 * n + m] = float(trit(qs[m], n) - 1) * d;
    for (int n = 0; n < 5; ++n)
        for (int m = 0; m < 16; ++m) y[160 + 16 * n + m] = float(trit(qs[32 + m], n) - 1) * d;
    for (int n = 0; n < 4; ++n)
        for (int m = 0; m < 4; ++m) y[240 + 4 * n + m] = float(trit(qh[m], n) - 1) * d;
}

// TQ2_0: qs[64] four 2-bit codes per byte, d. Code l of qs[32h + m] is weight 128h + 32l + m.
void decode_tq2_0(const uint8_t* b, float* y) {
    const float d = half_at(b + 64);
    for (int h = 0; h < 2; ++h)
        for (int l = 0; l < 4; ++l)
            for (int m = 0; m < 32; ++m) y[128 * h + 32 * l + m] = float(((b[32 * h + m] >> (2 * l)) & 3) - 1) * d;
}

}  // namespace

BlockDecoder iquant_block_decoder(TensorType t) {
    constexpr struct {
        TensorType type;
        BlockDecoder decode;
    } kDecoders[] = {
        {TensorType::IQ2_XXS, decode_iq2_xxs}, {TensorType::IQ2_XS, decode_iq2_xs}, {TensorType::IQ2_S, decode_iq2_s}, {TensorType::IQ3_XXS, decode_iq3_xxs},
        {TensorType::IQ3_S, decode_iq3_s},     {TensorType::IQ1_S, decode_iq1_s},   {TensorType::IQ1_M, decode_iq1_m}, {TensorType::IQ4_NL, decode_iq4_nl},
        {TensorType::IQ4_XS, decode_iq4_xs},   {TensorType::TQ1_0, decode_tq1_0},   {TensorType::TQ2_0, decode_tq2_0},
    };
    for (const auto& d : kDecoders)
        if (d.type == t) return d.decode;
    return nullptr;
}

}  // namespace vkllm::gguf
