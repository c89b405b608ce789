// IQ4_NL and IQ4_XS: 4-bit indices into llama.cpp's fixed non-linear table of 16 values
// (kvalues_iq4nl), decoded from the weight words (included by dequant.glsl, which declares
// w_words and the byte readers; dequant_dot.glsl takes IQ4_DOT for matvec's fused dots).
// Layouts: ggml-common.h.

#if defined(WTYPE_IQ4_NL) || defined(WTYPE_IQ4_XS)
#define IQ4_DOT 1
// The table as int8 bytes, four per word (value n is byte n % 4 of word n / 4). Selecting the
// word with comparisons keeps the lookup in registers: an indexed constant array is a memory
// load per element on some drivers (lavapipe: a scalar loop over the lanes).
const uint IQ4_WORD0 = 0xbfad9881u, IQ4_WORD1 = 0xf6eaddcfu, IQ4_WORD2 = 0x26190d01u, IQ4_WORD3 = 0x71594535u;
// The table values of the low nibbles of a word's four bytes (byte 0 first).
vec4 iq4_values(uint w) {
    const uvec4 n = uvec4(w, w >> 8, w >> 16, w >> 24) & 0xFu;
    const uvec4 lo = mix(uvec4(IQ4_WORD0), uvec4(IQ4_WORD1), greaterThanEqual(n, uvec4(4u)));
    const uvec4 hi = mix(uvec4(IQ4_WORD2), uvec4(IQ4_WORD3), greaterThanEqual(n, uvec4(12u)));
    const uvec4 word = mix(lo, hi, greaterThanEqual(n, uvec4(8u)));
    // byte n % 4 of the word, sign-extended
    return vec4(ivec4(word << (24u - 8u * (n & 3u))) >> 24);
}
#endif

#if defined(WTYPE_IQ4_NL)
// d: f16 at 0; qs[16] at 2: byte j holds element j (low nibble) and j + 16 (high), as Q4_0.
// x = d value[q]
const uint BLOCK_ELEMS = 32u, BLOCK_BYTES = 18u;
vec4 dequant4(uint blk, uint q) {
    return read_f16(blk) * iq4_values(read_u32(blk + 2u + 4u * (q & 3u)) >> (4u * (q >> 2)));
}
// The 32-element sub-block s of the block: its scale and the byte address of its 16 bytes of qs.
float iq4_sub_scale(uint blk, uint s) { return read_f16(blk); }
uint iq4_sub_qs(uint blk, uint s) { return blk + 2u; }

#elif defined(WTYPE_IQ4_XS)
// d: f16 at 0; scales_h: u16 at 2; scales_l[4] at 4; qs[128] at 8. Sub-block s (32 elements)
// has the 6-bit scale ls = (nibble s%2 of scales_l[s/2]) | (bits 2s..2s+1 of scales_h) << 4 and
// its elements in qs[16s..16s+15] as one IQ4_NL block's. x = d (ls - 32) value[q]
const uint BLOCK_ELEMS = 256u, BLOCK_BYTES = 136u;
float iq4_sub_scale(uint blk, uint s) {  // blocks are 4-byte aligned
    const uint w0 = w_words[blk >> 2], w1 = w_words[(blk >> 2) + 1u];
    const uint ls = ((w1 >> (4u * s)) & 0xFu) | (((w0 >> (16u + 2u * s)) & 3u) << 4);
    return unpackHalf2x16(w0).x * float(int(ls) - 32);
}
uint iq4_sub_qs(uint blk, uint s) { return blk + 8u + 16u * s; }
vec4 dequant4(uint blk, uint q) {
    const uint s = q >> 3, j = q & 7u;  // quad j of sub-block s
    const uint w = w_words[(iq4_sub_qs(blk, s) >> 2) + (j & 3u)] >> (4u * (j >> 2));
    return iq4_sub_scale(blk, s) * iq4_values(w);
}
#endif
