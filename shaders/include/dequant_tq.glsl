// TQ1_0 and TQ2_0: ternary weights (q - 1) d with q in {0, 1, 2} and one f16 scale per 256
// (included by dequant.glsl, which declares w_words and the byte readers). Layouts: ggml-common.h.

#if defined(WTYPE_TQ1_0)
// qs[48] at 0 (five trits per byte), qh[4] at 48 (four), d: f16 at 52. A byte holds its trits
// as the fraction byte / 256 ~ 0.t0t1t2t3t4 in base 3, so trit n is the integer part of
// 3 (byte 3^n mod 256) / 256. Trit n of qs[m] is element 32n + m (m < 32); of qs[32 + m],
// 160 + 16n + m (m < 16); of qh[m], 240 + 4n + m. Four consecutive elements are trit n of four
// consecutive bytes.
const uint BLOCK_ELEMS = 256u, BLOCK_BYTES = 54u;
const uint TQ1_POW3[5] = uint[5](1u, 3u, 9u, 27u, 81u);
vec4 dequant4(uint blk, uint q) {
    const uint e = 4u * q;
    uint a, n;  // byte offset of the four bytes, trit index
    if (e < 160u) {
        a = e & 31u;
        n = e >> 5;
    } else if (e < 240u) {
        a = 32u + ((e - 160u) & 15u);
        n = (e - 160u) >> 4;
    } else {
        a = 48u;
        n = (e - 240u) >> 2;
    }
    const uint w = read_u32(blk + a);
    const uvec4 b = ((uvec4(w, w >> 8, w >> 16, w >> 24) & 0xFFu) * TQ1_POW3[n]) & 0xFFu;
    return vec4(ivec4((b * 3u) >> 8) - 1) * read_f16(blk + 52u);
}

#elif defined(WTYPE_TQ2_0)
// qs[64] at 0 (2-bit codes: code l of qs[32h + m] is element 128h + 32l + m), d: f16 at 64.
const uint BLOCK_ELEMS = 256u, BLOCK_BYTES = 66u;
vec4 dequant4(uint blk, uint q) {
    const uint e = 4u * q;
    const uint w = read_u32(blk + 32u * (e >> 7) + (e & 31u)) >> (2u * ((e >> 5) & 3u));
    return (bytes_u(w & 0x03030303u) - 1.0) * read_f16(blk + 64u);
}
#endif
