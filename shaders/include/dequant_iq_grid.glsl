// The grid i-quants IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S and IQ1_M (included by
// dequant.glsl, which declares w_words and the byte readers). Each group of 8 weights is a point
// of a fixed codebook, the type's grid (engine/gguf/iq_grids.h; IQ3's points have 4 coordinates,
// so a group is two), times a scale, with one sign bit per weight (IQ2, IQ3) or a shift of +-1/8
// (IQ1). Layouts and arithmetic: engine/gguf/quant_iq.cpp (ggml-common.h), in the same order, so
// the values are bit for bit the CPU reference's.
//
// The grid is a storage buffer at binding IQ_GRID_BINDING, which the includer defines as the
// binding after its own; the weight ops bind the type's table there (Context::constant_buffer,
// weights::Format::grid). An indexed constant array of 256-2048 points instead took lavapipe
// 17-197 s to compile at a shader's first dispatch. Coordinate j of a point is byte j of its
// words: two words per point for the 8-coordinate grids, one for IQ3's; IQ2 and IQ3 coordinates
// are unsigned magnitudes, IQ1's int8 -1, 0, +1.
//
// Per type: iq_sub(blk, ib) reads what sub-block ib (elements 32 ib..32 ib + 31) of the block at
// byte address blk shares, and iq_group8(sub, l, lo, hi) decodes its group l (elements
// 32 ib + 8 l..+7); dequant4 and matvec's fused dot (dequant_dot.glsl, IQ_GRID) are built on them.

#if defined(WTYPE_IQ2_XXS) || defined(WTYPE_IQ2_XS) || defined(WTYPE_IQ2_S) || defined(WTYPE_IQ3_XXS) || \
    defined(WTYPE_IQ3_S) || defined(WTYPE_IQ1_S) || defined(WTYPE_IQ1_M)
#define IQ_GRID 1
#ifndef IQ_GRID_BINDING
#error "a shader that decodes a grid i-quant defines IQ_GRID_BINDING (the grid's binding)"
#endif
layout(std430, binding = IQ_GRID_BINDING) readonly buffer IqGrid { uint iq_grid[]; };

// Four signs from bits 0..3 of s: bit j set negates element j.
vec4 iq_sign4(uint s) { return vec4(1.0) - 2.0 * vec4(uvec4(s, s >> 1, s >> 2, s >> 3) & 1u); }

// IQ2_XXS, IQ2_XS and IQ3_XXS keep 7 sign bits per 8 weights; the eighth makes the count of
// minus signs even. Bit j set: weight j is negative.
uint iq_signs_from_7_bits(uint s7) {
    s7 &= 0x7fu;
    return s7 | (uint(bitCount(s7) & 1) << 7);
}

// IQ2 and IQ3: magnitudes (scale * coordinate, as the CPU multiplies) with their signs.
void iq_signed8(vec4 m_lo, vec4 m_hi, float scale, uint signs, out vec4 lo, out vec4 hi) {
    lo = (scale * m_lo) * iq_sign4(signs);
    hi = (scale * m_hi) * iq_sign4(signs >> 4);
}
// The IQ2 scale of a 4-bit code: d (0.5 + s) / 4.
float iq2_scale(float d, uint s) { return d * (0.5 + float(s)) * 0.25; }

// What a 32-element sub-block's groups share, read once (iq_sub): the block scale d and the
// sub-block's index, sign and scale bits, whose meaning each type gives below.
struct IqSub {
    float d;
    uint q0, q1, aux, h;
};
#endif

#if defined(WTYPE_IQ2_XXS)
// d: f16 at 0; per 32 weights 8 bytes at 2 + 8 ib: four 8-bit grid indices (q0), then a u32 of
// four 7-bit sign groups and a 4-bit scale in bits 28-31 (aux).
const uint BLOCK_ELEMS = 256u, BLOCK_BYTES = 66u;
IqSub iq_sub(uint blk, uint ib) {
    IqSub s = IqSub(0.0, 0u, 0u, 0u, 0u);
    s.d = read_f16(blk);
    s.q0 = read_u32(blk + 2u + 8u * ib);
    s.aux = read_u32(blk + 6u + 8u * ib);
    return s;
}
void iq_group8(IqSub s, uint l, out vec4 lo, out vec4 hi) {
    const uint i = (s.q0 >> (8u * l)) & 0xFFu;
    iq_signed8(bytes_u(iq_grid[2u * i]), bytes_u(iq_grid[2u * i + 1u]), iq2_scale(s.d, s.aux >> 28),
               iq_signs_from_7_bits(s.aux >> (7u * l)), lo, hi);
}

#elif defined(WTYPE_IQ2_XS)
// d: f16 at 0; qs[32] u16 at 2 (per group: a 9-bit grid index, a 7-bit sign group; q0, q1 hold a
// sub-block's four); scales[8] at 66 (a 4-bit scale per 16 weights; h).
const uint BLOCK_ELEMS = 256u, BLOCK_BYTES = 74u;
IqSub iq_sub(uint blk, uint ib) {
    IqSub s = IqSub(0.0, 0u, 0u, 0u, 0u);
    s.d = read_f16(blk);
    s.q0 = read_u32(blk + 2u + 8u * ib);
    s.q1 = read_u32(blk + 6u + 8u * ib);
    s.h = read_u8(blk + 66u + ib);
    return s;
}
void iq_group8(IqSub s, uint l, out vec4 lo, out vec4 hi) {
    const uint q = ((l < 2u ? s.q0 : s.q1) >> (16u * (l & 1u))) & 0xFFFFu, i = q & 511u;
    iq_signed8(bytes_u(iq_grid[2u * i]), bytes_u(iq_grid[2u * i + 1u]), iq2_scale(s.d, (s.h >> (4u * (l >> 1))) & 0xFu),
               iq_signs_from_7_bits(q >> 9), lo, hi);
}

#elif defined(WTYPE_IQ2_S)
// d: f16 at 0; qs[32] at 2 (low 8 index bits; q0); signs[32] at 34 (a bit per weight; aux);
// qh[8] at 66 (2 high index bits per group) and scales[8] at 74 (a 4-bit scale per 16 weights),
// a sub-block's bytes of both in h.
const uint BLOCK_ELEMS = 256u, BLOCK_BYTES = 82u;
IqSub iq_sub(uint blk, uint ib) {
    IqSub s = IqSub(0.0, 0u, 0u, 0u, 0u);
    s.d = read_f16(blk);
    s.q0 = read_u32(blk + 2u + 4u * ib);
    s.aux = read_u32(blk + 34u + 4u * ib);
    s.h = read_u8(blk + 66u + ib) | (read_u8(blk + 74u + ib) << 8);
    return s;
}
void iq_group8(IqSub s, uint l, out vec4 lo, out vec4 hi) {
    const uint i = ((s.q0 >> (8u * l)) & 0xFFu) | (((s.h >> (2u * l)) & 3u) << 8);
    iq_signed8(bytes_u(iq_grid[2u * i]), bytes_u(iq_grid[2u * i + 1u]), iq2_scale(s.d, (s.h >> (8u + 4u * (l >> 1))) & 0xFu),
               s.aux >> (8u * l), lo, hi);
}

#elif defined(WTYPE_IQ3_XXS)
// d: f16 at 0; qs[64] at 2 (an 8-bit index of a 4-coordinate point per 4 weights; q0, q1 hold a
// sub-block's eight); per 32 weights a u32 at 66 + 4 ib: four 7-bit sign groups, a 4-bit scale
// in bits 28-31 (aux). Weight = d (0.5 + scale) / 2 * magnitude.
const uint BLOCK_ELEMS = 256u, BLOCK_BYTES = 98u;
IqSub iq_sub(uint blk, uint ib) {
    IqSub s = IqSub(0.0, 0u, 0u, 0u, 0u);
    s.d = read_f16(blk);
    s.q0 = read_u32(blk + 2u + 8u * ib);
    s.q1 = read_u32(blk + 6u + 8u * ib);
    s.aux = read_u32(blk + 66u + 4u * ib);
    return s;
}
void iq_group8(IqSub s, uint l, out vec4 lo, out vec4 hi) {
    const uint i2 = ((l < 2u ? s.q0 : s.q1) >> (16u * (l & 1u))) & 0xFFFFu;  // the group's two indices
    iq_signed8(bytes_u(iq_grid[i2 & 0xFFu]), bytes_u(iq_grid[i2 >> 8]), s.d * (0.5 + float(s.aux >> 28)) * 0.5,
               iq_signs_from_7_bits(s.aux >> (7u * l)), lo, hi);
}

#elif defined(WTYPE_IQ3_S)
// d: f16 at 0; qs[64] at 2 (low 8 bits of a 4-coordinate point's index per 4 weights; q0, q1);
// qh[8] at 66 (the 9th bits of a sub-block's eight indices); signs[32] at 74 (a bit per weight;
// aux); scales[4] at 106 (a 4-bit scale per sub-block; h holds qh and the scale).
// Weight = d (1 + 2 scale) * magnitude.
const uint BLOCK_ELEMS = 256u, BLOCK_BYTES = 110u;
IqSub iq_sub(uint blk, uint ib) {
    IqSub s = IqSub(0.0, 0u, 0u, 0u, 0u);
    s.d = read_f16(blk);
    s.q0 = read_u32(blk + 2u + 8u * ib);
    s.q1 = read_u32(blk + 6u + 8u * ib);
    s.aux = read_u32(blk + 74u + 4u * ib);
    s.h = read_u8(blk + 66u + ib) | (((read_u8(blk + 106u + (ib >> 1)) >> (4u * (ib & 1u))) & 0xFu) << 8);
    return s;
}
void iq_group8(IqSub s, uint l, out vec4 lo, out vec4 hi) {
    const uint i2 = ((l < 2u ? s.q0 : s.q1) >> (16u * (l & 1u))) & 0xFFFFu;
    const uint qh = s.h >> (2u * l);
    iq_signed8(bytes_u(iq_grid[(i2 & 0xFFu) | ((qh & 1u) << 8)]), bytes_u(iq_grid[(i2 >> 8) | ((qh & 2u) << 7)]),
               s.d * float(1u + 2u * (s.h >> 8)), s.aux >> (8u * l), lo, hi);
}

#elif defined(WTYPE_IQ1_S) || defined(WTYPE_IQ1_M)
// IQ1: scale * (coordinate + delta), delta = +-1/8, over iq1s_grid's ternary points.
void iq1_point8(uint i, float scale, bool negative_delta, out vec4 lo, out vec4 hi) {
    const float delta = negative_delta ? -0.125 : 0.125;
    lo = scale * (bytes_s(iq_grid[2u * i]) + delta);
    hi = scale * (bytes_s(iq_grid[2u * i + 1u]) + delta);
}
#if defined(WTYPE_IQ1_S)
// d: f16 at 0; qs[32] at 2 (low 8 index bits; q0); qh[8] u16 at 34, per 32 weights: four 3-bit
// high index parts, a 3-bit scale in bits 12-14, the delta's sign in bit 15 (h).
const uint BLOCK_ELEMS = 256u, BLOCK_BYTES = 50u;
IqSub iq_sub(uint blk, uint ib) {
    IqSub s = IqSub(0.0, 0u, 0u, 0u, 0u);
    s.d = read_f16(blk);
    s.q0 = read_u32(blk + 2u + 4u * ib);
    s.h = read_u16(blk + 34u + 2u * ib);
    return s;
}
void iq_group8(IqSub s, uint l, out vec4 lo, out vec4 hi) {
    iq1_point8(((s.q0 >> (8u * l)) & 0xFFu) | (((s.h >> (3u * l)) & 7u) << 8), s.d * float(2u * ((s.h >> 12) & 7u) + 1u),
               (s.h & 0x8000u) != 0u, lo, hi);
}
#else
// qs[32] at 0 (low 8 index bits; q0); qh[16] at 32 (a nibble per group: 3 high index bits, the
// delta's sign; a sub-block's two bytes in h); four u16 scales at 48: a 3-bit scale per 16
// weights in bits 0-11 (a sub-block's six bits in aux), and the f16 block scale d spread over
// their top nibbles.
const uint BLOCK_ELEMS = 256u, BLOCK_BYTES = 56u;
IqSub iq_sub(uint blk, uint ib) {
    const uint s01 = read_u32(blk + 48u), s23 = read_u32(blk + 52u);  // sc[0] | sc[1] << 16, sc[2] | sc[3] << 16
    const uint d_bits = ((s01 >> 12) & 0xFu) | ((s01 >> 24) & 0xF0u) | ((s23 >> 4) & 0xF00u) | ((s23 >> 16) & 0xF000u);
    const uint sc = (ib < 4u ? s01 : s23) >> (16u * ((ib >> 1) & 1u));  // sc[ib / 2] in bits 0-15
    IqSub s = IqSub(0.0, 0u, 0u, 0u, 0u);
    s.d = unpackHalf2x16(d_bits).x;
    s.q0 = read_u32(blk + 4u * ib);
    s.h = read_u16(blk + 32u + 2u * ib);
    s.aux = (sc >> (6u * (ib & 1u))) & 0x3Fu;
    return s;
}
void iq_group8(IqSub s, uint l, out vec4 lo, out vec4 hi) {
    const uint nibble = (s.h >> (4u * l)) & 0xFu;
    const float scale = s.d * float(2u * ((s.aux >> (3u * (l >> 1))) & 7u) + 1u);
    iq1_point8(((s.q0 >> (8u * l)) & 0xFFu) | ((nibble & 7u) << 8), scale, (nibble & 8u) != 0u, lo, hi);
}
#endif
#endif

#ifdef IQ_GRID
// Elements 4q..4q+3: half q % 2 of group q / 2.
vec4 dequant4(uint blk, uint q) {
    vec4 lo, hi;
    iq_group8(iq_sub(blk, q >> 3), (q >> 1) & 3u, lo, hi);
    return (q & 1u) != 0u ? hi : lo;
}
#endif
