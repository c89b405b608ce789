// The decode matvecs' x when it was quantized beforehand (matvec.comp and moe_matvec.comp with
// XQ; the layout of shaders/quantize_act.comp and ops::QuantizedActs): binding 1 holds x's int8
// quants, four to a word, from word XQ_QUANTS, one f32 scale per block of XQ_BLOCK from word
// XQ_SCALES and the quant sums of each block of 32 (Q8_32 types; the int8 dots' bias and minimum
// terms) or 16 (the K-quants) from word XQ_SUMS. The includer defines those three as the word
// indices of its row of x (push constants, or a pair's row), and pc.x_vec4: XQ_QUANTS is a
// multiple of 4. Include after matvec_round.glsl (X_ROUND_Q8_32 picks the block) and
// dequant.glsl (bytes_s).
#if defined(X_ROUND_Q8_32)
const uint XQ_BLOCK = 32u;   // block_q8_0
#else
const uint XQ_BLOCK = 256u;  // block_q8_K: the K-quants and IQ4_XS
#endif
layout(std430, binding = 1) readonly buffer XqWords { uint xq_words[]; };
layout(std430, binding = 1) readonly buffer XqQuads { uvec4 xq_quads[]; };

// x at elements e..e+3 (e a multiple of 4) as the rounding left them: scale * quant, the same
// float multiplication as round_act.comp's, so the same values.
vec4 xq_quad(uint e) {
    const float d = uintBitsToFloat(xq_words[XQ_SCALES + e / XQ_BLOCK]);
    return d * bytes_s(xq_words[XQ_QUANTS + (e >> 2)]);
}

// Block `unit` of 32 (Q8_32 types): its quants as eight words (lo: elements 0..15, hi: 16..31),
// its scale and its quant sum. x_vec4: x_base is a multiple of 4 words, so two 16-byte loads.
void xq_unit(uint unit, out uvec4 lo, out uvec4 hi, out float d_x, out int xq_sum) {
    const uint i = XQ_QUANTS + 8u * unit;
    if (pc.x_vec4 != 0u) {
        lo = xq_quads[i >> 2];
        hi = xq_quads[(i >> 2) + 1u];
    } else {
        lo = uvec4(xq_words[i], xq_words[i + 1u], xq_words[i + 2u], xq_words[i + 3u]);
        hi = uvec4(xq_words[i + 4u], xq_words[i + 5u], xq_words[i + 6u], xq_words[i + 7u]);
    }
    d_x = uintBitsToFloat(xq_words[XQ_SCALES + unit]);
    xq_sum = int(xq_words[XQ_SUMS + unit]);
}
