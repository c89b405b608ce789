// Matvec's int8 dot products (include after dequant_dot.glsl, with INT_DOT): for the weight
// types whose blocks are 32 elements with one scale, against x rounded to 8-bit blocks of 32 as
// llama.cpp's CPU backend rounds it (x_i = d_x q_i, q_i in -127..127). The 32 products of a unit
// are summed exactly in integers by the 4x8-bit packed dot (SPV_KHR_integer_dot_product, OpSDot),
// then scaled once, as ggml's vec_dot_<type>_q8_0/q8_1 do:
//   Q8_0, Q4_0, Q5_0   d_w d_x sum_i w_i q_i                 (w_i the signed quant)
//   Q4_1, Q5_1         d_w d_x sum_i w_i q_i + m_w d_x sum_i q_i
// The device must have the integer dot product (Capabilities::integer_dot_product); glslang's
// GL_EXT_spirv_intrinsics declares the instruction, so no newer GLSL extension is needed.
// With XQ (x quantized beforehand), Q4_K, Q5_K and Q6_K dot x's blocks of 256 too (below).
#extension GL_EXT_spirv_intrinsics : require

// OpSDot (4450) of two words, each four signed bytes (PackedVectorFormat4x8Bit = 0).
// Capabilities 6019 DotProduct, 6018 DotProductInput4x8BitPacked.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4x8(uint a, uint b, spirv_literal int packed_format);
int sdot(uint a, uint b) { return sdot4x8(a, b, 0); }

// Q4_0 and Q5_0 quants are unsigned 4- or 5-bit values v with a bias (8 or 16) to subtract:
// v fits a signed byte as it is, so the packed dot takes v and the bias comes off once per
// block, sum_i (v_i - bias) q_i = sum_i v_i q_i - bias sum_i q_i (xq_sum), exactly in integers.

#if defined(WTYPE_Q8_0)
// Dot of unit u (the whole block) with the packed quants xq (word i: quad i) of x.
float mv_idot(uint blk, uvec4 xq_lo, uvec4 xq_hi, int xq_sum, float d_x) {
    uint a[4], b[4];
    const uint qa = block_quants_address(blk);
    load_quants4(qa, a);
    load_quants4(qa + 16u, b);
    int s = 0;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) s += sdot(a[j], xq_lo[j]) + sdot(b[j], xq_hi[j]);
    return block_scale(blk) * d_x * float(s);
}

#elif defined(WTYPE_Q4_0) || defined(WTYPE_Q4_1)
float mv_idot(uint blk, uvec4 xq_lo, uvec4 xq_hi, int xq_sum, float d_x) {
    uint q[4];
#ifdef WTYPE_Q4_0
    load_quants4(block_quants_address(blk), q);
#else
    [[unroll]] for (uint j = 0u; j < 4u; ++j) q[j] = w_words[(blk >> 2) + 1u + j];
#endif
    int s = 0;
    [[unroll]] for (uint j = 0u; j < 4u; ++j)
        s += sdot(q[j] & 0x0F0F0F0Fu, xq_lo[j]) + sdot((q[j] >> 4) & 0x0F0F0F0Fu, xq_hi[j]);
#ifdef WTYPE_Q4_0
    return block_scale(blk) * d_x * float(s - 8 * xq_sum);
#else
    const vec2 dm = unpackHalf2x16(w_words[blk >> 2]);
    return dm.x * d_x * float(s) + dm.y * d_x * float(xq_sum);
#endif
}

#elif defined(WTYPE_Q5_0) || defined(WTYPE_Q5_1)
float mv_idot(uint blk, uvec4 xq_lo, uvec4 xq_hi, int xq_sum, float d_x) {
    uint q[4];
#ifdef WTYPE_Q5_0
    load_run4(blk + 6u, q);
    const uint qh = read_u32(blk + 2u);
#else
    [[unroll]] for (uint j = 0u; j < 4u; ++j) q[j] = w_words[(blk >> 2) + 2u + j];
    const uint qh = w_words[(blk >> 2) + 1u];
#endif
    int s = 0;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
        const uint lo = (q[j] & 0x0F0F0F0Fu) | (spread4(qh >> (4u * j)) << 4);
        const uint hi = ((q[j] >> 4) & 0x0F0F0F0Fu) | (spread4(qh >> (16u + 4u * j)) << 4);
        s += sdot(lo, xq_lo[j]) + sdot(hi, xq_hi[j]);
    }
#ifdef WTYPE_Q5_0
    return read_f16(blk) * d_x * float(s - 16 * xq_sum);
#else
    const vec2 dm = unpackHalf2x16(w_words[blk >> 2]);
    return dm.x * d_x * float(s) + dm.y * d_x * float(xq_sum);
#endif
}
#elif defined(XQ) && (defined(WTYPE_Q2_K) || defined(WTYPE_Q3_K) || defined(WTYPE_Q4_K) || defined(WTYPE_Q5_K) || \
                       defined(WTYPE_Q6_K))
// The K-quants against x quantized beforehand in blocks of 256 (block_q8_K, matvec_xq.glsl): a
// unit is 32 elements of the super-block, two runs of 16 under one scale each (dequant_dot.glsl's
// units); xq_lo / xq_hi hold x's quants at the unit's quads 0..3 / 4..7, d_x is the block's scale
// and `sums` the word index of its 16 quant sums (one per 16 elements), which carry the minimum
// or bias term as ggml's vec_dot_<type>_q8_K takes them from bsums:
//   Q4_K, Q5_K  d_x (d sum_s sc_s sum_i q_i x_i - dmin sum_s m_s bsum_s)
//   Q6_K        d_x d sum_s sc_s (sum_i q_i x_i - 32 bsum_s)
//   Q3_K        d_x d sum_s sc_s (sum_i u_i x_i - 4 bsum_s), u = q + 4 (q's low 2 bits, high bit)
//   Q2_K        d_x (d sum_s sc_s sum_i q_i x_i - dmin sum_s m_s sum_i x_i): its scales cover 16
//               elements of which a unit holds 8, so the x sums are the unit's own (a dot with
//               ones), not bsums
// The quants are unsigned (at most 6 bits), so they fit the packed dot's signed bytes as they are.
#define IDOT_KQUANT 1
float mv_idot_k(uint blk, uint u, uvec4 xq_lo, uvec4 xq_hi, uint sums, float d_x) {
#if defined(WTYPE_Q2_K)
    // dequant_dot.glsl's unit (H, c): quads 2s and 2s + 1 are bits 2s of qs words q0 and q1.
    const uint b = blk >> 2, H = u >> 2, c = u & 3u;  // blocks are 4-byte aligned
    const vec2 dm = unpackHalf2x16(w_words[b + 20u]);
    const uint q0 = w_words[b + 4u + 8u * H + 2u * c], q1 = w_words[b + 4u + 8u * H + 2u * c + 1u];
    const uint s01 = w_words[b + 2u * H] >> (8u * (c >> 1)), s23 = w_words[b + 2u * H + 1u] >> (8u * (c >> 1));
    const uint sc[4] = uint[4](s01 & 0xFFu, (s01 >> 16) & 0xFFu, s23 & 0xFFu, (s23 >> 16) & 0xFFu);
    const uint xq[8] = uint[8](xq_lo.x, xq_lo.y, xq_lo.z, xq_lo.w, xq_hi.x, xq_hi.y, xq_hi.z, xq_hi.w);
    int sum = 0, msum = 0;
    [[unroll]] for (uint s = 0u; s < 4u; ++s) {
        const int qx = sdot((q0 >> (2u * s)) & 0x03030303u, xq[2u * s]) + sdot((q1 >> (2u * s)) & 0x03030303u, xq[2u * s + 1u]);
        const int xs = sdot(0x01010101u, xq[2u * s]) + sdot(0x01010101u, xq[2u * s + 1u]);
        sum += int(sc[s] & 0xFu) * qx;
        msum += int(sc[s] >> 4) * xs;
    }
    return d_x * (dm.x * float(sum) - dm.y * float(msum));
#elif defined(WTYPE_Q3_K)
    // The generic unit (dequant_dot.glsl): elements 32u..32u+31, quads 0..3 under scale group
    // 2u and 4..7 under 2u + 1. Element 32u + l: low bits in qs byte 32(u/4) + l at bit 2(u%4),
    // high bit in hmask byte l at bit u.
    int lo = 0, hi = 0;
    [[unroll]] for (uint j = 0u; j < 8u; ++j) {
        const uint q2 = (read_u32(blk + 32u + 32u * (u >> 2) + 4u * j) >> (2u * (u & 3u))) & 0x03030303u;
        const uint hm = (read_u32(blk + 4u * j) >> u) & 0x01010101u;
        const int d = sdot(q2 | (hm << 2), j < 4u ? xq_lo[j] : xq_hi[j - 4u]);
        if (j < 4u) lo += d;
        else hi += d;
    }
    const int bs_lo = int(xq_words[sums + 2u * u]), bs_hi = int(xq_words[sums + 2u * u + 1u]);
    return d_x * read_f16(blk + 108u) *
           (q3k_scale(blk, 2u * u) * float(lo - 4 * bs_lo) + q3k_scale(blk, 2u * u + 1u) * float(hi - 4 * bs_hi));
#elif defined(WTYPE_Q6_K)
    const uint H = u >> 2, k = (u >> 1) & 1u, h = u & 1u;
    uint qlo[4], qhi[4];
    q6k_unit_quants(blk, u, qlo, qhi);  // dequant_dot.glsl
    int lo = 0, hi = 0;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
        lo += sdot(qlo[j], xq_lo[j]);
        hi += sdot(qhi[j], xq_hi[j]);
    }
    const uint g = 8u * H + 2u * k + h;  // the low run's scale and sum; the high run's are g + 4
    const int bs_lo = int(xq_words[sums + g]), bs_hi = int(xq_words[sums + g + 4u]);
    const uint p = block_quants_address(blk);
    return d_x * block_scale(blk) *
           (q6k_scale(p, 16u * g) * float(lo - 32 * bs_lo) + q6k_scale(p, 16u * (g + 4u)) * float(hi - 32 * bs_hi));
#else
    const uint p = u >> 1, h = u & 1u;  // sub-blocks 2p (low nibbles) and 2p + 1, half h
    const K4Unit k = k4_unit(blk, u);  // dequant_dot.glsl
    int lo = 0, hi = 0;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
        lo += sdot(k.lo[j], xq_lo[j]);
        hi += sdot(k.hi[j], xq_hi[j]);
    }
    // The runs' 16-element groups: 4p + h (low) and 4p + 2 + h (high) of the block's 16.
    const int bs_lo = int(xq_words[sums + 4u * p + h]), bs_hi = int(xq_words[sums + 4u * p + 2u + h]);
    return d_x * (k.dm.x * (k.sm_lo.x * float(lo) + k.sm_hi.x * float(hi)) -
                  k.dm.y * (k.sm_lo.y * float(bs_lo) + k.sm_hi.y * float(bs_hi)));
#endif
}
#else
#error "INT_DOT: no int8 dot for this weight type"
#endif
