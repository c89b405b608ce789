// GELU forms shared by elementwise.comp and the fused GeGLU matvec (matvec.comp); include after
// fp16.glsl.

// GELU, tanh approximation (Hendrycks & Gimpel 2016): 0.5 x (1 + tanh(z)) = x * sigmoid(2z),
// z = sqrt(2/pi) (x + 0.044715 x^3); the sigmoid form cannot overflow into NaN.
float gelu_tanh(float x) {
    const float z = 0.7978845608028654 * (x + 0.044715 * x * x * x);
    return x / (1.0 + exp(-2.0 * z));
}

// GELU as llama.cpp's CPU backend computes it (GGML_GELU_FP16): x rounded to fp16, gelu of it
// rounded to fp16 (its lookup table), with x <= -10 -> 0 and x >= 10 -> x.
float gelu_fp16_table(float x) {
    if (x <= -10.0) return 0.0;
    if (x >= 10.0) return x;
    return round_to_fp16(gelu_tanh(round_to_fp16(x)));
}
