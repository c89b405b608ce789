// K-quant super-blocks of 256 elements and MXFP4, decoded from the weight words (included by
// dequant.glsl, which declares w_words and the byte readers). Layouts: ggml-common.h.

#if defined(WTYPE_Q4_K) || defined(WTYPE_Q5_K)
// Q4_K/Q5_K: eight (scale, min) 6-bit pairs packed in the 12 bytes at byte 4 of the block
// (ggml's get_scale_min_k4), from the block's words 1..3 (s0, s1, s2); s: sub-block 0..7.
vec2 k4_scale_min_of(uint s0, uint s1, uint s2, uint s) {
    const uint sh = 8u * (s & 3u);
    const uint b0 = (s0 >> sh) & 0xFFu, b1 = (s1 >> sh) & 0xFFu, b2 = (s2 >> sh) & 0xFFu;
    if (s < 4u) return vec2(b0 & 63u, b1 & 63u);
    return vec2((b2 & 0xFu) | ((b0 >> 6) << 4), (b2 >> 4) | ((b1 >> 6) << 4));
}
#endif

#if defined(WTYPE_Q4_K)
// d, dmin: f16 at 0, 2; scales[12] at 4; qs[128] at 16: element 32s + l of sub-block s is
// nibble s%2 of qs[32(s/2) + l]. x = d sc q - dmin m
const uint BLOCK_ELEMS = 256u, BLOCK_BYTES = 144u;
vec4 dequant4(uint blk, uint q) {
    const uint b = blk >> 2, e = 4u * q, s = e >> 5;  // blocks are 4-byte aligned
    const uvec4 head = load_words4(b);  // d and dmin, the 12 bytes of scales and mins
    const vec2 dm = unpackHalf2x16(head.x);
    const vec2 sm = k4_scale_min_of(head.y, head.z, head.w, s);
    const uint w = w_words[b + 4u + 8u * (s >> 1) + ((e & 31u) >> 2)] >> (4u * (s & 1u));
    return (dm.x * sm.x) * bytes_u(w & 0x0F0F0F0Fu) - dm.y * sm.y;
}

#elif defined(WTYPE_Q5_K)
// As Q4_K plus qh[32] at 16 (bit s of qh[l]: 5th bit of element 32s + l); qs[128] at 48.
const uint BLOCK_ELEMS = 256u, BLOCK_BYTES = 176u;
vec4 dequant4(uint blk, uint q) {
    const uint b = blk >> 2, e = 4u * q, s = e >> 5, l = (e & 31u) >> 2;
    const uvec4 head = load_words4(b);
    const vec2 dm = unpackHalf2x16(head.x);
    const vec2 sm = k4_scale_min_of(head.y, head.z, head.w, s);
    const uint w = (w_words[b + 12u + 8u * (s >> 1) + l] >> (4u * (s & 1u))) & 0x0F0F0F0Fu;
    const uint h = ((w_words[b + 4u + l] >> s) & 0x01010101u) << 4;
    return (dm.x * sm.x) * bytes_u(w | h) - dm.y * sm.y;
}

#elif defined(WTYPE_Q6_K)
// ql[128] at 0, qh[64] at 128, scales int8[16] at 192 (one per 16 elements), d: f16 at 208.
// In half h (128 elements), element 32k + l has its low nibble in ql[64h + 32(k%2) + l]
// (nibble k/2) and its top two bits in qh[32h + l] at bit 2k. x = d sc (q - 32)
const uint BLOCK_ELEMS = 256u, BLOCK_BYTES = 210u;
#define W_GROUPABLE 1
const uint GROUP_SCALE_AT = 208u;  // grouped blocks (dequant.glsl): the payload is bytes 0..207
// The int8 scale of element e, from the block's payload at byte p (block_quants_address).
float q6k_scale(uint p, uint e) { return float(int(read_u8(p + 192u + (e >> 4)) << 24) >> 24); }
vec4 dequant4(uint blk, uint q) {
    const uint e = 4u * q, h = e >> 7, k = (e >> 5) & 3u, l = e & 31u;
    const uint p = block_quants_address(blk);
    const uint ql = (read_u32(p + 64u * h + 32u * (k & 1u) + l) >> (4u * (k >> 1))) & 0x0F0F0F0Fu;
    const uint qh = (read_u32(p + 128u + 32u * h + l) >> (2u * k)) & 0x03030303u;
    return (block_scale(blk) * q6k_scale(p, e)) * (bytes_u(ql | (qh << 4)) - 32.0);
}

#elif defined(WTYPE_Q2_K)
// scales[16] at 0 (low nibble: scale, high: min, per 16 elements); qs[64] at 16: element i is
// bits 2((i%128)/32) of qs[32(i/128) + i%32]; d, dmin: f16 at 80, 82. x = d sc q - dmin m
const uint BLOCK_ELEMS = 256u, BLOCK_BYTES = 84u;
vec4 dequant4(uint blk, uint q) {
    const uint b = blk >> 2, e = 4u * q;  // blocks are 4-byte aligned
    const vec2 dm = unpackHalf2x16(w_words[b + 20u]);
    const uint sc = read_u8(blk + (e >> 4));
    const uint w = w_words[b + 4u + 8u * (e >> 7) + ((e & 31u) >> 2)] >> (2u * ((e >> 5) & 3u));
    return (dm.x * float(sc & 0xFu)) * bytes_u(w & 0x03030303u) - dm.y * float(sc >> 4);
}

#elif defined(WTYPE_Q3_K)
// hmask[32] at 0 (bit i/32 of hmask[i%32]: high bit of element i), qs[64] at 32 (low two bits,
// as Q2_K), scales: sixteen 6-bit values in 12 bytes at 96 (offset 32), d: f16 at 108.
// x = d (sc - 32) (q - (high ? 0 : 4))
const uint BLOCK_ELEMS = 256u, BLOCK_BYTES = 110u;
float q3k_scale(uint blk, uint g) {
    const uint low = (read_u8(blk + 96u + (g & 7u)) >> (4u * (g >> 3))) & 0xFu;
    const uint high = (read_u8(blk + 104u + (g & 3u)) >> (2u * (g >> 2))) & 3u;
    return float(int(low | (high << 4)) - 32);
}
vec4 dequant4(uint blk, uint q) {
    const uint e = 4u * q, l = e & 31u;
    const uint q2 = (read_u32(blk + 32u + 32u * (e >> 7) + l) >> (2u * ((e >> 5) & 3u))) & 0x03030303u;
    const uint hm = (read_u32(blk + l) >> (e >> 5)) & 0x01010101u;
    return (read_f16(blk + 108u) * q3k_scale(blk, e >> 4)) * (bytes_u(q2 | (hm << 2)) - 4.0);
}

#elif defined(WTYPE_MXFP4)
// e: E8M0 scale byte at 0; qs[16] at 1 (nibbles as Q4_0) index E2M1 values. Blocks are 17
// bytes, so they sit at any byte address. x = 2^(e-127) * value
const uint BLOCK_ELEMS = 32u, BLOCK_BYTES = 17u;
// E2M1 values doubled (integers); the scale is halved to match (as ggml's tables).
const float MXFP4_VALUES[16] = float[16](0., 1., 2., 3., 4., 6., 8., 12., 0., -1., -2., -3., -4., -6., -8., -12.);
// 32 bits at any byte address (a word-aligned read loads the same word twice).
uint read_u32_any(uint a) {
    const uint i = a >> 2, sh = (a & 3u) << 3;
    const uint lo = w_words[i], hi = w_words[i + uint(sh != 0u)];
    return (lo >> sh) | ((hi << 1) << (31u - sh));
}
float e8m0_half(uint e) { return uintBitsToFloat(e < 2u ? (0x00200000u << e) : ((e - 1u) << 23)); }
vec4 mxfp4_values(uint nibbles) {
    return vec4(MXFP4_VALUES[nibbles & 0xFu], MXFP4_VALUES[(nibbles >> 8) & 0xFu],
                MXFP4_VALUES[(nibbles >> 16) & 0xFu], MXFP4_VALUES[(nibbles >> 24) & 0xFu]);
}
vec4 dequant4(uint blk, uint q) {
    const uint w = read_u32_any(blk + 1u + 4u * (q & 3u)) >> (4u * (q >> 2));
    return e8m0_half(read_u8(blk)) * mxfp4_values(w);
}
#endif
