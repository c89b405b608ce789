// Weight decoding shared by matvec, matmul and get_rows: ggml's tensor formats read from a
// stream of 32-bit words, so no 8- or 16-bit storage feature is needed.
//
// The includer defines exactly one WTYPE_<TYPE> (WTYPE_F32, WTYPE_Q4_0, ...). This file
// declares the weight buffer (binding 0) and, for that type:
//   BLOCK_ELEMS, BLOCK_BYTES   a block of elements and its bytes (32 elements for float types)
//   vec4 dequant4(blk, q)      elements 4q..4q+3 of the block at byte address blk
// Float types also give w_elem(row_base, e) for the elements of a row past its last full
// block (F32/F16/BF16 rows may have any length). dequant_dot.glsl adds matvec's fused dots;
// dequant_k.glsl, dequant_iq4.glsl, dequant_tq.glsl and dequant_iq_grid.glsl hold the super-block,
// MXFP4, IQ4, ternary and grid i-quant formats (the last read their grid from a binding of the
// includer's choosing, IQ_GRID_BINDING).
//
// Blocks sit at any even byte address (Q4_0 blocks are 18 bytes, Q6_K 210; MXFP4's 17-byte
// blocks at any address), so multi-byte fields are assembled from the word stream by byte
// address. Layouts: ggml-common.h.
//
// The 16-byte-aligned layout (the includer's specialization constant W_ALIGNED = 1): the rows
// start on 16-byte boundaries and their blocks' quants are 16-byte aligned, so the readers take
// them with wide loads (load_words4, load_quants4). Q4_K and Q5_K blocks (144 and 176 bytes) are
// so in the file's order whenever the weight starts on a 16-byte boundary; Q4_0, Q8_0 and Q6_K
// in grouped blocks (the weights were uploaded so, ops::group_blocks): each 8 consecutive blocks of a row are stored
// as their 8 f16 scales (16 bytes) and then their 8 payloads (the block's other bytes in order:
// 16, 32 or 208 each), the same bytes in the same space, rows on 16-byte boundaries. Every
// payload is then 16-byte aligned and read with wide loads, where a block of 18, 34 or 210
// bytes costs five word loads per 16 bytes and the shifts that join them. Every includer
// declares W_ALIGNED (0 for the other types) and finds a block through block_address: the
// address of the block itself, or with grouped blocks its group's (a multiple of 16) plus its
// place in the group (0..7); block_quants_address gives its payload and block_scale its scale.

layout(std430, binding = 0) readonly buffer WeightWords { uint w_words[]; };
layout(std430, binding = 0) readonly buffer WeightQuads { uvec4 w_quads[]; };  // the same words, by 4

// Byte `a` of the weight binding.
uint read_u8(uint a) { return (w_words[a >> 2] >> ((a & 3u) << 3)) & 0xFFu; }
// 16 bits at an even byte address.
uint read_u16(uint a) { return (w_words[a >> 2] >> ((a & 2u) << 3)) & 0xFFFFu; }
// 32 bits at an even byte address. Branch-free: a word-aligned read loads the same word twice
// (never the one past it, which may lie outside the binding).
uint read_u32(uint a) {
    const uint i = a >> 2;
    const uint odd = (a >> 1) & 1u;  // 1 when a is 2 mod 4
    const uint lo = w_words[i], hi = w_words[i + odd];
    const uint sh = odd << 4;
    return (lo >> sh) | ((hi << 16) << (16u - sh));
}
float read_f16(uint a) { return unpackHalf2x16(read_u16(a)).x; }
// Words i..i+3 of the weight binding: one 16-byte load in the aligned layout (i a multiple of 4).
uvec4 load_words4(uint i) {
    if (W_ALIGNED != 0u) return w_quads[i >> 2];
    return uvec4(w_words[i], w_words[i + 1u], w_words[i + 2u], w_words[i + 3u]);
}
// Defined at the end of this file for the types that can be grouped.
uint block_quants_address(uint blk);
float block_scale(uint blk);

// 16 bytes at an even byte address as four words, in 5 loads (a word-aligned run loads its last
// word twice rather than the one past it, which may lie outside the binding).
void load_run4(uint a, out uint q[4]) {
    const uint i = a >> 2, odd = (a >> 1) & 1u;
    const uint w0 = w_words[i], w1 = w_words[i + 1u], w2 = w_words[i + 2u], w3 = w_words[i + 3u];
    const uint w4 = w_words[i + 3u + odd];
    if (odd != 0u) {
        q[0] = (w0 >> 16) | (w1 << 16);
        q[1] = (w1 >> 16) | (w2 << 16);
        q[2] = (w2 >> 16) | (w3 << 16);
        q[3] = (w3 >> 16) | (w4 << 16);
    } else {
        q[0] = w0;
        q[1] = w1;
        q[2] = w2;
        q[3] = w3;
    }
}

// The four bytes of a word as floats (byte 0 first). Not int-to-float conversions, which a GPU
// issues at a fraction of its float rate (an H100/H200 SM converts 16 per clock against 128
// adds, and a K-quant unit converts each of its 32 quants): a byte b OR'd into the mantissa of
// 2^23 is the float 2^23 + b exactly, and subtracting 2^23 leaves b exactly, so the values are
// the conversions' bit for bit.
vec4 bytes_u(uint w) {
    return uintBitsToFloat((uvec4(w, w >> 8, w >> 16, w >> 24) & 0xFFu) | 0x4B000000u) - 8388608.0;
}
// The four bytes of a word as signed int8 values: b + 128 (bit 7 flipped) the same way, exact.
vec4 bytes_s(uint w) {
    return uintBitsToFloat((uvec4(w, w >> 8, w >> 16, w >> 24) & 0xFFu) ^ 0x4B000080u) - 8388736.0;
}
// Bits 0..3 of b moved to bit 0 of bytes 0..3 (the 5th bit of four Q5 elements).
uint spread4(uint b) { return (b & 1u) | ((b & 2u) << 7) | ((b & 4u) << 14) | ((b & 8u) << 21); }

#if defined(WTYPE_F32) || defined(WTYPE_F16) || defined(WTYPE_BF16)
#define W_FLOAT 1
const uint BLOCK_ELEMS = 32u;  // any row length; blocks only group the elements
#endif

#if defined(WTYPE_F32)
const uint BLOCK_BYTES = 128u;
float w_elem(uint row_base, uint e) { return uintBitsToFloat(w_words[(row_base >> 2) + e]); }
vec4 dequant4(uint blk, uint q) {
    const uint i = (blk >> 2) + 4u * q;
    return uintBitsToFloat(uvec4(w_words[i], w_words[i + 1u], w_words[i + 2u], w_words[i + 3u]));
}
#elif defined(WTYPE_F16)
const uint BLOCK_BYTES = 64u;
float w_elem(uint row_base, uint e) { return read_f16(row_base + 2u * e); }
vec4 dequant4(uint blk, uint q) {
    const uint a = blk + 8u * q;
    return vec4(unpackHalf2x16(read_u32(a)), unpackHalf2x16(read_u32(a + 4u)));
}
#elif defined(WTYPE_BF16)
const uint BLOCK_BYTES = 64u;
float w_elem(uint row_base, uint e) { return uintBitsToFloat(read_u16(row_base + 2u * e) << 16); }
vec4 dequant4(uint blk, uint q) {
    const uint a = blk + 8u * q;
    const uint p0 = read_u32(a), p1 = read_u32(a + 4u);
    return uintBitsToFloat(uvec4(p0 << 16, p0 & 0xFFFF0000u, p1 << 16, p1 & 0xFFFF0000u));
}

#elif defined(WTYPE_Q8_0)
// d: f16 at 0; qs: int8[32] at 2. x = d * q
const uint BLOCK_ELEMS = 32u, BLOCK_BYTES = 34u;
#define W_GROUPABLE 1
const uint GROUP_SCALE_AT = 0u;  // the f16 scale's place in the block (grouped blocks, below)

#elif defined(WTYPE_Q4_0)
// d: f16 at 0; qs[16] at 2: byte j holds element j (low nibble) and j + 16 (high). x = d (q - 8)
const uint BLOCK_ELEMS = 32u, BLOCK_BYTES = 18u;
#define W_GROUPABLE 1
const uint GROUP_SCALE_AT = 0u;

#elif defined(WTYPE_Q4_1)
// d, m: f16 at 0, 2; qs[16] at 4 (nibbles as Q4_0). x = d q + m
const uint BLOCK_ELEMS = 32u, BLOCK_BYTES = 20u;
vec4 dequant4(uint blk, uint q) {
    const vec2 dm = unpackHalf2x16(w_words[blk >> 2]);  // blocks are 4-byte aligned
    const uint w = w_words[(blk >> 2) + 1u + (q & 3u)] >> (4u * (q >> 2));
    return dm.x * bytes_u(w & 0x0F0F0F0Fu) + dm.y;
}

#elif defined(WTYPE_Q5_0)
// d: f16 at 0; qh: u32 at 2, bit j = 5th bit of element j; qs[16] at 6. x = d (q - 16)
const uint BLOCK_ELEMS = 32u, BLOCK_BYTES = 22u;
vec4 dequant4(uint blk, uint q) {
    const uint w = (read_u32(blk + 6u + 4u * (q & 3u)) >> (4u * (q >> 2))) & 0x0F0F0F0Fu;
    const uint h = spread4(read_u32(blk + 2u) >> (4u * q)) << 4;
    return read_f16(blk) * (bytes_u(w | h) - 16.0);
}

#elif defined(WTYPE_Q5_1)
// d, m: f16 at 0, 2; qh: u32 at 4; qs[16] at 8. x = d q + m
const uint BLOCK_ELEMS = 32u, BLOCK_BYTES = 24u;
vec4 dequant4(uint blk, uint q) {
    const uint b = blk >> 2;  // blocks are 4-byte aligned
    const vec2 dm = unpackHalf2x16(w_words[b]);
    const uint w = (w_words[b + 2u + (q & 3u)] >> (4u * (q >> 2))) & 0x0F0F0F0Fu;
    const uint h = spread4(w_words[b + 1u] >> (4u * q)) << 4;
    return dm.x * bytes_u(w | h) + dm.y;
}
#endif

#include "dequant_k.glsl"
#include "dequant_iq4.glsl"
#include "dequant_tq.glsl"
#include "dequant_iq_grid.glsl"

// The block `ib` of the row at byte address row_addr, as the readers below take it.
uint block_address(uint row_addr, uint ib) {
#ifdef W_GROUPABLE
    if (W_ALIGNED != 0u) return (row_addr + (ib >> 3) * (8u * BLOCK_BYTES)) | (ib & 7u);
#endif
    return row_addr + ib * BLOCK_BYTES;
}

#ifdef W_GROUPABLE
// A block's f16 scale and the start of its quants (its payload), by byte address.
uint block_scale_address(uint blk) { return W_ALIGNED != 0u ? (blk & ~15u) + 2u * (blk & 7u) : blk + GROUP_SCALE_AT; }
uint block_quants_address(uint blk) {
    if (W_ALIGNED != 0u) return (blk & ~15u) + 16u + (BLOCK_BYTES - 2u) * (blk & 7u);
    return GROUP_SCALE_AT == 0u ? blk + 2u : blk;  // the bytes after the scale, or before it
}
float block_scale(uint blk) { return read_f16(block_scale_address(blk)); }
// 16 bytes of a block's quants from byte `a` of its payload, as four words: one wide load where
// the blocks are grouped (16-byte aligned), else five word loads (load_run4).
void load_quants4(uint a, out uint q[4]) {
    if (W_ALIGNED != 0u) {
        const uvec4 v = w_quads[a >> 4];
        q[0] = v.x;
        q[1] = v.y;
        q[2] = v.z;
        q[3] = v.w;
    } else {
        load_run4(a, q);
    }
}
#endif

#if defined(WTYPE_Q8_0)
vec4 dequant4(uint blk, uint q) { return block_scale(blk) * bytes_s(read_u32(block_quants_address(blk) + 4u * q)); }
#elif defined(WTYPE_Q4_0)
vec4 dequant4(uint blk, uint q) {
    const uint w = read_u32(block_quants_address(blk) + 4u * (q & 3u)) >> (4u * (q >> 2));
    return block_scale(blk) * (bytes_u(w & 0x0F0F0F0Fu) - 8.0);
}
#endif
