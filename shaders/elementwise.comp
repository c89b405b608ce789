#version 450
// Elementwise ops, one variant per OP define; a grid-stride loop over n values.
//   SWIGLU:   out = silu(a) * b            GEGLU:    out = gelu(a) * b       ADD: out = a + b
//   GELU:     out = gelu(a) (tanh form)    GELU_ERF: out = 0.5 a (1 + erf(a / sqrt 2))
//   SCALE:    out = a * factor             ADD_BIAS: out[r, c] = a[r, c] + b[c], rows `stride` apart
//   SOFTCAP:  out = factor * tanh(a / factor) (Gemma 2 logit soft-capping)
//   SWIGLU_OAI: gpt-oss's clamped SwiGLU (alpha in factor, limit bit-cast in row_len)
//   FP16_TABLE (with GELU or GEGLU): gelu as llama.cpp's CPU backend tabulates it in fp16
// out may be the same memory as a or b: each element is read and written by one invocation.
#include "common.glsl"
#include "fp16.glsl"
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer Out { float o[]; };

layout(push_constant) uniform Push {
    uint n;        // values to produce (ADD_BIAS: rows * row_len)
    uint a_shift;  // element offsets inside the bound windows
    uint b_shift;
    uint o_shift;
    uint row_len;  // ADD_BIAS: bias length
    uint stride;   // ADD_BIAS: floats between rows of a and out
    float factor;  // SCALE
} pc;

float silu(float x) { return x / (1.0 + exp(-x)); }


#include "gelu.glsl"

// erf by Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7), odd extension for x < 0.
float erf_approx(float x) {
    const float ax = abs(x);
    const float t = 1.0 / (1.0 + 0.3275911 * ax);
    const float poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    return sign(x) * (1.0 - poly * exp(-ax * ax));
}

float apply(uint i) {
#if defined(ADD_BIAS)
    const uint row = i / pc.row_len, col = i - row * pc.row_len;
    return a[pc.a_shift + row * pc.stride + col] + b[pc.b_shift + col];
#else
    const float x = a[pc.a_shift + i];
#if defined(SWIGLU)
    return silu(x) * b[pc.b_shift + i];
#elif defined(GEGLU) && defined(FP16_TABLE)
    return gelu_fp16_table(x) * b[pc.b_shift + i];
#elif defined(GEGLU)
    return gelu_tanh(x) * b[pc.b_shift + i];
#elif defined(SWIGLU_OAI)
    // gpt-oss: g = min(gate, limit), u = clamp(up, -limit, limit), g * sigmoid(alpha g) * (u + 1);
    // alpha is `factor`, limit is bit-cast in `row_len`.
    const float limit = uintBitsToFloat(pc.row_len);
    const float g = min(x, limit);
    const float u = clamp(b[pc.b_shift + i], -limit, limit);
    return g / (1.0 + exp(-pc.factor * g)) * (u + 1.0);
#elif defined(ADD)
    return x + b[pc.b_shift + i];
#elif defined(GELU) && defined(FP16_TABLE)
    return gelu_fp16_table(x);
#elif defined(GELU)
    return gelu_tanh(x);
#elif defined(GELU_ERF)
    return 0.5 * x * (1.0 + erf_approx(x * 0.7071067811865476));
#elif defined(SCALE)
    return x * pc.factor;
#elif defined(SOFTCAP)
    // tanh(z) = 1 - 2 / (exp(2z) + 1): exp overflowing to inf gives 1, never NaN.
    return pc.factor * (1.0 - 2.0 / (exp(2.0 * x / pc.factor) + 1.0));
#else
#error "elementwise.comp: define one OP"
#endif
#endif
}

void main() {
    const uint threads = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += threads) {
#if defined(ADD_BIAS)
        const uint row = i / pc.row_len, col = i - row * pc.row_len;
        o[pc.o_shift + row * pc.stride + col] = apply(i);
#else
        o[pc.o_shift + i] = apply(i);
#endif
    }
}
