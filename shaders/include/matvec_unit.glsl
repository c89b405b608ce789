// accumulate_unit(unit) of the decode matvecs (matvec.comp, moe_matvec.comp): adds 32-element
// unit `unit` of each of the NACC rows at row_addr[] to acc[], against x read by the includer's
// x_quad(e) (x rounded first with ROUND_X). With INT_DOT the unit of x is rounded to int8 once and
// dotted in integers (dequant_idot.glsl); with INT_DOT and XQ its int8 quants come ready-made
// (matvec_xq.glsl). Include after dequant_dot.glsl and matvec_round.glsl.
// The includer declares the specialization constant MV_ROLLED: 1 keeps the loop over the rows a
// loop (CPU drivers: lavapipe compiles the unrolled form several times slower and runs it slower
// too, 8 rows of f32 at 1.8 against 2.7 GB/s), 0 unrolls it (GPUs: the sums stay in registers).
// The other branch folds away when the pipeline is specialized.
#ifdef INT_DOT
#include "dequant_idot.glsl"
#endif

// Adds unit `unit` of every row to acc.
#if defined(INT_DOT) && defined(XQ) && defined(IDOT_KQUANT)
void accumulate_unit(uint unit) {  // K-quants, x quantized beforehand in blocks of 256
    const uint ib = unit / MV_UNITS, u = unit % MV_UNITS;
    uvec4 lo, hi;  // x's quants at the unit's quads 0..3 and 4..7 (dequant_dot.glsl's mv_quad_elem)
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
        lo[i] = xq_words[XQ_QUANTS + ((ib * BLOCK_ELEMS + mv_quad_elem(u, i)) >> 2)];
        hi[i] = xq_words[XQ_QUANTS + ((ib * BLOCK_ELEMS + mv_quad_elem(u, 4u + i)) >> 2)];
    }
    const float d_x = uintBitsToFloat(xq_words[XQ_SCALES + ib]);
    const uint sums = XQ_SUMS + 16u * ib;
    if (MV_ROLLED != 0u) {
        [[dont_unroll]] for (uint r = 0u; r < NACC; ++r) acc[r] += mv_idot_k(block_address(row_addr[r], ib), u, lo, hi, sums, d_x);
    } else {
        [[unroll]] for (uint r = 0u; r < NACC; ++r) acc[r] += mv_idot_k(block_address(row_addr[r], ib), u, lo, hi, sums, d_x);
    }
}
#elif defined(INT_DOT) && defined(XQ)
void accumulate_unit(uint unit) {  // x quantized beforehand (matvec_xq.glsl): its words as they are
    uvec4 lo, hi;
    float d_x;
    int xq_sum;
    xq_unit(unit, lo, hi, d_x, xq_sum);
    if (MV_ROLLED != 0u) {
        [[dont_unroll]] for (uint r = 0u; r < NACC; ++r) acc[r] += mv_idot(block_address(row_addr[r], unit), lo, hi, xq_sum, d_x);
    } else {
        [[unroll]] for (uint r = 0u; r < NACC; ++r) acc[r] += mv_idot(block_address(row_addr[r], unit), lo, hi, xq_sum, d_x);
    }
}
#elif defined(INT_DOT)
uint pack_s8(ivec4 q) { return uint(q.x & 0xFF) | uint(q.y & 0xFF) << 8 | uint(q.z & 0xFF) << 16 | uint(q.w) << 24; }
void accumulate_unit(uint unit) {  // a unit is one block of 32 (MV_UNITS == 1)
    vec4 xv[8];
    [[unroll]] for (uint i = 0u; i < 8u; ++i) xv[i] = x_quad(unit * 32u + 4u * i);
    // round_unit's scale and quants, kept as integers
    float amax = 0.0;
    [[unroll]] for (uint i = 0u; i < 8u; ++i) amax = max(amax, max(max(abs(xv[i].x), abs(xv[i].y)), max(abs(xv[i].z), abs(xv[i].w))));
    const float d_x = round_to_fp16(div_rn(amax, 127.0));
    const float id = amax != 0.0 ? div_rn(127.0, amax) : 0.0;
    // roundEven(x id) without float-to-int conversions (a GPU issues those at a fraction of its
    // float rate): |x id| <= 127, and adding 1.5 * 2^23 rounds it to the nearest integer, ties to
    // even, as the float add rounds; that integer is then the low bits of the sum's bit pattern,
    // 0x4B400000 + q. `precise` keeps the product rounded on its own (no fused multiply-add).
    uvec4 lo, hi;
    ivec4 qsum = ivec4(0);
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
        precise const vec4 ta = xv[i] * id, tb = xv[4u + i] * id;
        precise const vec4 sa = ta + 12582912.0, sb = tb + 12582912.0;
        const ivec4 a = floatBitsToInt(sa) - 0x4B400000, b = floatBitsToInt(sb) - 0x4B400000;
        lo[i] = pack_s8(a);
        hi[i] = pack_s8(b);
        qsum += a + b;
    }
    const int xq_sum = qsum.x + qsum.y + qsum.z + qsum.w;
    if (MV_ROLLED != 0u) {
        [[dont_unroll]] for (uint r = 0u; r < NACC; ++r) acc[r] += mv_idot(block_address(row_addr[r], unit), lo, hi, xq_sum, d_x);
    } else {
        [[unroll]] for (uint r = 0u; r < NACC; ++r) acc[r] += mv_idot(block_address(row_addr[r], unit), lo, hi, xq_sum, d_x);
    }
}
#else
void accumulate_unit(uint unit) {
    const uint ib = unit / MV_UNITS, u = unit % MV_UNITS;
    vec4 xv[8];
    [[unroll]] for (uint i = 0u; i < 8u; ++i) xv[i] = x_quad(ib * BLOCK_ELEMS + mv_quad_elem(u, i));
    if (ROUND_X != 0u) round_unit(xv);
    if (MV_ROLLED != 0u) {
        [[dont_unroll]] for (uint r = 0u; r < NACC; ++r) acc[r] += mv_dot(block_address(row_addr[r], ib), u, xv);
    } else {
        [[unroll]] for (uint r = 0u; r < NACC; ++r) acc[r] += mv_dot(block_address(row_addr[r], ib), u, xv);
    }
}
#endif
