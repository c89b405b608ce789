// Matvec's work units (include after dequant.glsl): 32 elements of a block (or super-block) whose
// words one thread reads together, dotted with x in the quantized domain, e.g. for Q4_K
//   sum_i (d sc q_i - dmin m) x_i = d sc sum_i q_i x_i - dmin m sum_i x_i,
// so the scales are applied once per 16 or 32 elements, not per element. Per type:
//   MV_UNITS                  units per block (BLOCK_ELEMS / 32)
//   mv_quad_elem(u, i)        offset in the block of the first element of quad i (0..7) of unit u
//   mv_dot(blk, u, xv)        dot of unit u of the block at byte address blk with x, where xv[i]
//                             holds x at the elements of quad i

vec4 nib_lo(uint w) { return bytes_u(w & 0x0F0F0F0Fu); }
vec4 nib_hi(uint w) { return bytes_u((w >> 4) & 0x0F0F0F0Fu); }
// Sum of the x values of quads i0..i0+3.
float xsum4(vec4 xv[8], uint i0) { return dot(xv[i0] + xv[i0 + 1u] + xv[i0 + 2u] + xv[i0 + 3u], vec4(1.0)); }

#if defined(WTYPE_F16) || defined(WTYPE_BF16)
#define HAS_MV_DOT 1
const uint MV_UNITS = 1u;
uint mv_quad_elem(uint u, uint i) { return 4u * i; }
vec4 halves4(uint a, uint b) {
#ifdef WTYPE_F16
    return vec4(unpackHalf2x16(a), unpackHalf2x16(b));
#else
    return uintBitsToFloat(uvec4(a << 16, a & 0xFFFF0000u, b << 16, b & 0xFFFF0000u));
#endif
}
float mv_dot(uint blk, uint u, vec4 xv[8]) {
    float s = 0.0;
    [[unroll]] for (uint r = 0u; r < 4u; ++r) {  // four runs of 8 halves
        uint q[4];
        load_run4(blk + 16u * r, q);
        s += dot(halves4(q[0], q[1]), xv[2u * r]) + dot(halves4(q[2], q[3]), xv[2u * r + 1u]);
    }
    return s;
}

#elif defined(WTYPE_Q8_0)
#define HAS_MV_DOT 1
const uint MV_UNITS = 1u;
uint mv_quad_elem(uint u, uint i) { return 4u * i; }
float mv_dot(uint blk, uint u, vec4 xv[8]) {
    uint a[4], b[4];
    const uint qa = block_quants_address(blk);
    load_quants4(qa, a);
    load_quants4(qa + 16u, b);
    float s = 0.0;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) s += dot(bytes_s(a[j]), xv[j]) + dot(bytes_s(b[j]), xv[4u + j]);
    return block_scale(blk) * s;
}

#elif defined(WTYPE_Q4_0) || defined(WTYPE_Q4_1)
#define HAS_MV_DOT 1
const uint MV_UNITS = 1u;
uint mv_quad_elem(uint u, uint i) { return 4u * i; }  // word j: quads j (low nibbles), j + 4 (high)
float mv_dot(uint blk, uint u, vec4 xv[8]) {
    uint q[4];
#ifdef WTYPE_Q4_0
    load_quants4(block_quants_address(blk), q);
#else
    [[unroll]] for (uint j = 0u; j < 4u; ++j) q[j] = w_words[(blk >> 2) + 1u + j];
#endif
    float s = 0.0;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) s += dot(nib_lo(q[j]), xv[j]) + dot(nib_hi(q[j]), xv[4u + j]);
    const float xs = xsum4(xv, 0u) + xsum4(xv, 4u);
#ifdef WTYPE_Q4_0
    return block_scale(blk) * (s - 8.0 * xs);
#else
    const vec2 dm = unpackHalf2x16(w_words[blk >> 2]);
    return dm.x * s + dm.y * xs;
#endif
}

#elif defined(WTYPE_Q5_0) || defined(WTYPE_Q5_1)
#define HAS_MV_DOT 1
const uint MV_UNITS = 1u;
uint mv_quad_elem(uint u, uint i) { return 4u * i; }
float mv_dot(uint blk, uint u, vec4 xv[8]) {
    uint q[4];
#ifdef WTYPE_Q5_0
    load_run4(blk + 6u, q);
    const uint qh = read_u32(blk + 2u);
#else
    [[unroll]] for (uint j = 0u; j < 4u; ++j) q[j] = w_words[(blk >> 2) + 2u + j];
    const uint qh = w_words[(blk >> 2) + 1u];
#endif
    float s = 0.0;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
        const uint lo = (q[j] & 0x0F0F0F0Fu) | (spread4(qh >> (4u * j)) << 4);
        const uint hi = ((q[j] >> 4) & 0x0F0F0F0Fu) | (spread4(qh >> (16u + 4u * j)) << 4);
        s += dot(bytes_u(lo), xv[j]) + dot(bytes_u(hi), xv[4u + j]);
    }
    const float xs = xsum4(xv, 0u) + xsum4(xv, 4u);
#ifdef WTYPE_Q5_0
    return read_f16(blk) * (s - 16.0 * xs);
#else
    const vec2 dm = unpackHalf2x16(w_words[blk >> 2]);
    return dm.x * s + dm.y * xs;
#endif
}

#elif defined(WTYPE_Q4_K) || defined(WTYPE_Q5_K)
// Unit u: sub-block pair p = u/2, half h = u%2: qs words 4h..4h+3 of the pair hold elements
// 64p + 16h + 0..15 (low nibbles, sub-block 2p) and 64p + 32 + 16h + 0..15 (high, 2p + 1).
#define HAS_MV_DOT 1
const uint MV_UNITS = 8u;
uint mv_quad_elem(uint u, uint i) { return 64u * (u >> 1) + 16u * (u & 1u) + 4u * (i & 3u) + 32u * (i >> 2); }
// Unit u's d and dmin, its two sub-blocks' (scale, min) and its quants four to a word (lo[j]:
// quad j, of sub-block 2p; hi[j]: quad 4 + j, of 2p + 1), Q5_K's fifth bit joined in. The float
// dot below and the integer dot (dequant_idot.glsl) take the same.
struct K4Unit {
    vec2 dm, sm_lo, sm_hi;
    uint lo[4], hi[4];
};
K4Unit k4_unit(uint blk, uint u) {
    const uint b = blk >> 2, p = u >> 1, h = u & 1u;  // blocks are 4-byte aligned (16 with W_ALIGNED)
    const uvec4 head = load_words4(b);  // d and dmin, the 12 bytes of scales and mins
    K4Unit k;
    k.dm = unpackHalf2x16(head.x);
    k.sm_lo = k4_scale_min_of(head.y, head.z, head.w, 2u * p);
    k.sm_hi = k4_scale_min_of(head.y, head.z, head.w, 2u * p + 1u);
#ifdef WTYPE_Q4_K
    const uvec4 qs = load_words4(b + 4u + 8u * p + 4u * h);
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
        k.lo[j] = qs[j] & 0x0F0F0F0Fu;
        k.hi[j] = (qs[j] >> 4) & 0x0F0F0F0Fu;
    }
#else
    const uvec4 qs = load_words4(b + 12u + 8u * p + 4u * h), qhs = load_words4(b + 4u + 4u * h);
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
        const uint qh = qhs[j] >> (2u * p);
        k.lo[j] = (qs[j] & 0x0F0F0F0Fu) | ((qh & 0x01010101u) << 4);
        k.hi[j] = ((qs[j] >> 4) & 0x0F0F0F0Fu) | (((qh >> 1) & 0x01010101u) << 4);
    }
#endif
    return k;
}
float mv_dot(uint blk, uint u, vec4 xv[8]) {
    const K4Unit k = k4_unit(blk, u);
    float lo = 0.0, hi = 0.0;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
        lo += dot(bytes_u(k.lo[j]), xv[j]);
        hi += dot(bytes_u(k.hi[j]), xv[4u + j]);
    }
    return k.dm.x * (k.sm_lo.x * lo + k.sm_hi.x * hi) - k.dm.y * (k.sm_lo.y * xsum4(xv, 0u) + k.sm_hi.y * xsum4(xv, 4u));
}

#elif defined(WTYPE_Q6_K)
// Unit u: half H = u/4, k = (u/2)%2, h = u%2: ql bytes 64H + 32k + 16h + 0..15 hold elements
// 128H + 32k + 16h + 0..15 (low nibbles) and the same + 64 (high nibbles); their top bits are
// in qh bytes 32H + 16h + 0..15 at bits 2k and 2k + 4. Each 16 elements share one scale.
#define HAS_MV_DOT 1
const uint MV_UNITS = 8u;
uint mv_quad_elem(uint u, uint i) {
    return 128u * (u >> 2) + 32u * ((u >> 1) & 1u) + 16u * (u & 1u) + 4u * (i & 3u) + 64u * (i >> 2);
}
// The 6-bit quants of unit u, four to a word (byte i of word j: quad j's element i): lo[j] the
// unit's quads 0..3 (the low 16 elements), hi[j] quads 4..7 (the high 16). The integer dot
// (dequant_idot.glsl) takes the same words.
void q6k_unit_quants(uint blk, uint u, out uint lo[4], out uint hi[4]) {
    const uint H = u >> 2, k = (u >> 1) & 1u, h = u & 1u;
    const uint p = block_quants_address(blk);
    uint ql[4], qh[4];
    load_quants4(p + 64u * H + 32u * k + 16u * h, ql);
    load_quants4(p + 128u + 32u * H + 16u * h, qh);
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
        const uint top = qh[j] >> (2u * k);
        lo[j] = (ql[j] & 0x0F0F0F0Fu) | ((top & 0x03030303u) << 4);
        hi[j] = ((ql[j] >> 4) & 0x0F0F0F0Fu) | (((top >> 4) & 0x03030303u) << 4);
    }
}
float mv_dot(uint blk, uint u, vec4 xv[8]) {
    const uint H = u >> 2, k = (u >> 1) & 1u, h = u & 1u;
    uint qlo[4], qhi[4];
    q6k_unit_quants(blk, u, qlo, qhi);
    float lo = 0.0, hi = 0.0;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
        lo += dot(bytes_u(qlo[j]), xv[j]);
        hi += dot(bytes_u(qhi[j]), xv[4u + j]);
    }
    const uint g = 8u * H + 2u * k + h;  // scale of the low 16 elements; the high ones use g + 4
    const uint p = block_quants_address(blk);
    return block_scale(blk) * (q6k_scale(p, 16u * g) * (lo - 32.0 * xsum4(xv, 0u)) +
                               q6k_scale(p, 16u * (g + 4u)) * (hi - 32.0 * xsum4(xv, 4u)));
}

#elif defined(WTYPE_Q2_K)
// Unit u: half H = u/4, c = u%4: qs bytes 32H + 8c + 0..7 hold, at bits 2s, elements
// 128H + 32s + 8c + 0..7 for s = 0..3 (quads 2s and 2s + 1), each 8 under one scale byte.
#define HAS_MV_DOT 1
const uint MV_UNITS = 8u;
uint mv_quad_elem(uint u, uint i) { return 128u * (u >> 2) + 32u * (i >> 1) + 8u * (u & 3u) + 4u * (i & 1u); }
float mv_dot(uint blk, uint u, vec4 xv[8]) {
    const uint b = blk >> 2, H = u >> 2, c = u & 3u;  // blocks are 4-byte aligned
    const vec2 dm = unpackHalf2x16(w_words[b + 20u]);
    const uint q0 = w_words[b + 4u + 8u * H + 2u * c], q1 = w_words[b + 4u + 8u * H + 2u * c + 1u];
    // scale byte of group 8H + 2s + c/2: bytes 8H + c/2 + {0, 2, 4, 6}
    const uint s01 = w_words[b + 2u * H] >> (8u * (c >> 1)), s23 = w_words[b + 2u * H + 1u] >> (8u * (c >> 1));
    const uint sc[4] = uint[4](s01 & 0xFFu, (s01 >> 16) & 0xFFu, s23 & 0xFFu, (s23 >> 16) & 0xFFu);
    float sum = 0.0, msum = 0.0;
    [[unroll]] for (uint s = 0u; s < 4u; ++s) {
        const float qx = dot(bytes_u((q0 >> (2u * s)) & 0x03030303u), xv[2u * s]) +
                         dot(bytes_u((q1 >> (2u * s)) & 0x03030303u), xv[2u * s + 1u]);
        sum += float(sc[s] & 0xFu) * qx;
        msum += float(sc[s] >> 4) * dot(xv[2u * s] + xv[2u * s + 1u], vec4(1.0));
    }
    return dm.x * sum - dm.y * msum;
}
#elif defined(IQ4_DOT)
// IQ4_NL, IQ4_XS: unit u is a 32-element (sub-)block under one scale; word j of its qs holds
// quads j (low nibbles) and j + 4 (high), as Q4_0's.
#define HAS_MV_DOT 1
const uint MV_UNITS = BLOCK_ELEMS / 32u;
uint mv_quad_elem(uint u, uint i) { return 32u * u + 4u * i; }
float mv_dot(uint blk, uint u, vec4 xv[8]) {
    uint q[4];
    load_run4(iq4_sub_qs(blk, u), q);
    float s = 0.0;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) s += dot(iq4_values(q[j]), xv[j]) + dot(iq4_values(q[j] >> 4), xv[4u + j]);
    return iq4_sub_scale(blk, u) * s;
}
#elif defined(IQ_GRID)
// The grid i-quants: unit u is sub-block u (32 elements): what its groups share read once
// (iq_sub), then decoded a group of 8 at a time.
#define HAS_MV_DOT 1
const uint MV_UNITS = 8u;
uint mv_quad_elem(uint u, uint i) { return 32u * u + 4u * i; }
float mv_dot(uint blk, uint u, vec4 xv[8]) {
    const IqSub sub = iq_sub(blk, u);
    float s = 0.0;
    [[unroll]] for (uint l = 0u; l < 4u; ++l) {
        vec4 lo, hi;
        iq_group8(sub, l, lo, hi);
        s += dot(lo, xv[2u * l]) + dot(hi, xv[2u * l + 1u]);
    }
    return s;
}
#endif

#ifndef HAS_MV_DOT
// Any other type: unit u is elements 32u..32u+31 of the block, decoded quad by quad.
const uint MV_UNITS = BLOCK_ELEMS / 32u;
uint mv_quad_elem(uint u, uint i) { return 32u * u + 4u * i; }
float mv_dot(uint blk, uint u, vec4 xv[8]) {
    float s = 0.0;
    [[unroll]] for (uint i = 0u; i < 8u; ++i) s += dot(dequant4(blk, 8u * u + i), xv[i]);
    return s;
}
#endif
