// Exact fp16 rounding helpers (the driver's packHalf2x16 rounding mode is unspecified).

// fp32 -> fp16 -> fp32 with round-to-nearest-even, independent of the driver's packHalf2x16.
float round_to_fp16(float f) {
    uint b = floatBitsToUint(f);
    uint sign = b & 0x80000000u;
    uint a = b & 0x7fffffffu;
    if (a >= 0x477ff000u) return uintBitsToFloat(sign | 0x7f800000u);  // overflow (and inf/nan) -> inf
    if (a < 0x38800000u) {
        // fp16 subnormal range: multiples of 2^-24.
        float v = roundEven(uintBitsToFloat(a) * 16777216.0) / 16777216.0;
        return sign != 0u ? -v : v;
    }
    // Keep 10 mantissa bits: add half an ulp (minus one when the kept lsb is 0: ties to even).
    uint lsb = (a >> 13) & 1u;
    a = (a + 0x0fffu + lsb) & 0xffffe000u;
    return uintBitsToFloat(sign | a);
}
