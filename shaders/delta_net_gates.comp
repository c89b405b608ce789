#version 450
// Gated DeltaNet's per-head gates from its projections (llama.cpp's qwen3next / qwen35 graphs):
//   g    = softplus(alpha + dt_bias[h]) * A[h]     (the log-decay; A = -exp(A_log) < 0)
//   beta = sigmoid(b)
// for n_tokens x n_head values. alpha and b of head h sit at column (h / hpg) * group_stride +
// h % hpg of their token's row (Qwen3-Next interleaves b and alpha per key head; hpg = n_head,
// a plain row, otherwise). g and beta are written as plain rows at their strides.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;

layout(std430, binding = 0) readonly buffer Alpha { float alpha[]; };
layout(std430, binding = 1) readonly buffer Bv { float bv[]; };
layout(std430, binding = 2) readonly buffer DtBias { float dt_bias[]; };
layout(std430, binding = 3) readonly buffer Ah { float a[]; };
layout(std430, binding = 4) writeonly buffer G { float g[]; };
layout(std430, binding = 5) writeonly buffer Beta { float beta[]; };

layout(push_constant) uniform Push {
    uint n_tokens;
    uint n_head;
    uint hpg;           // heads per group of the inputs' columns
    uint group_stride;  // columns from one group to the next
    uint alpha_shift;   // element offsets inside the bound windows
    uint alpha_stride;  // floats between token rows
    uint b_shift;
    uint b_stride;
    uint dtb_shift;
    uint a_shift;
    uint g_shift;
    uint g_stride;
    uint beta_shift;
    uint beta_stride;
} pc;

// ggml_compute_softplus_f32: v above 20, else log1p(exp(v)) (log1p through Goldberg's trick).
float softplus(float v) {
    if (v > 20.0) return v;
    const float e = exp(v);
    const float u = 1.0 + e;
    return u == 1.0 ? e : log(u) * (e / (u - 1.0));
}

void main() {
    const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WG + gl_LocalInvocationID.x;
    if (i >= pc.n_tokens * pc.n_head) return;
    const uint t = i / pc.n_head, h = i - t * pc.n_head;
    const uint col = (h / pc.hpg) * pc.group_stride + h % pc.hpg;
    const float sp = softplus(alpha[pc.alpha_shift + t * pc.alpha_stride + col] + dt_bias[pc.dtb_shift + h]);
    g[pc.g_shift + t * pc.g_stride + h] = sp * a[pc.a_shift + h];
    beta[pc.beta_shift + t * pc.beta_stride + h] = 1.0 / (1.0 + exp(-bv[pc.b_shift + t * pc.b_stride + col]));
}
