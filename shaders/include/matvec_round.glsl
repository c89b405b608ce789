// The decode matvecs' own activation rounding (matvec.comp, moe_matvec.comp; include after
// dequant.glsl and fp16.glsl; the includer declares the ROUND_X specialization constant).
// With ROUND_X, x is rounded here as shaders/round_act.comp would round it for this weight type
// (the same operations, so the same values), which saves decode that dispatch and its barrier:
// Q8_32 types take whole blocks of 32 per unit, so a thread rounds its own block; F16 and BF16
// round each element. Other types (Q8_K's blocks of 256 span threads) are rounded beforehand.
#if defined(WTYPE_Q4_0) || defined(WTYPE_Q4_1) || defined(WTYPE_Q5_0) || defined(WTYPE_Q5_1) || \
    defined(WTYPE_Q8_0) || defined(WTYPE_MXFP4) || defined(WTYPE_IQ4_NL)
#define X_ROUND_Q8_32 1
#elif defined(WTYPE_F16)
#define X_ROUND_F16 1
#elif defined(WTYPE_BF16)
#define X_ROUND_BF16 1
#endif

float round_elem(float v) {
#if defined(X_ROUND_F16)
    return round_to_fp16(v);
#elif defined(X_ROUND_BF16)
    const uint b = floatBitsToUint(v);
    if ((b & 0x7fffffffu) > 0x7f800000u) return v;  // NaN stays NaN
    return uintBitsToFloat((b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u);
#else
    return v;
#endif
}

void round_unit(inout vec4 xv[8]) {
#if defined(X_ROUND_Q8_32)
    float amax = 0.0;
    [[unroll]] for (uint i = 0u; i < 8u; ++i) amax = max(amax, max(max(abs(xv[i].x), abs(xv[i].y)), max(abs(xv[i].z), abs(xv[i].w))));
    const float d = round_to_fp16(div_rn(amax, 127.0));
    const float id = amax != 0.0 ? div_rn(127.0, amax) : 0.0;
    [[unroll]] for (uint i = 0u; i < 8u; ++i) xv[i] = d * roundEven(xv[i] * id);
#elif defined(X_ROUND_F16) || defined(X_ROUND_BF16)
    [[unroll]] for (uint i = 0u; i < 8u; ++i)
        xv[i] = vec4(round_elem(xv[i].x), round_elem(xv[i].y), round_elem(xv[i].z), round_elem(xv[i].w));
#endif
}
