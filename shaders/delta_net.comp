#version 450
// The gated delta rule (Gated DeltaNet; with a decay per key row, Kimi's KDA), sequential over
// the tokens of one sequence, parallel over value heads and value columns. Invocation (h, j)
// owns column j of head h's d_k x d_v state S, kept in registers across the tokens (D_K is a
// specialization constant); columns never interact, so there is no barrier. Per token:
//   S[:, j] *= exp(g)                          (g per head, or per key row i: flags bit 0)
//   d        = beta * (v[j] - S[:, j] . k)
//   S[:, j] += k d
//   o[j]     = scale * (S[:, j] . q)
// With flags bit 1, q and k are L2-normalised first as llama.cpp's build_gdn_l2_norm:
// x / sqrt(mean(x^2) + eps / n) / sqrt(n). The norm is one factor per vector, so it is applied
// to the dot products and to the update instead of to q and k (the sums of squares come along
// in the same passes). Value head h reads key head h / (n_head_v / n_head_k) (interleaved) or
// h % n_head_k (tiled: flags bit 2). The state [n_head_v][d_v][D_K] (ggml's: a column of S
// contiguous) is read at the start and written back at the end. o may be v itself.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint D_K = 128;

layout(std430, binding = 0) buffer State { float st[]; };
layout(std430, binding = 1) readonly buffer Q { float q[]; };
layout(std430, binding = 2) readonly buffer K { float k[]; };
layout(std430, binding = 3) readonly buffer V { float v[]; };
layout(std430, binding = 4) readonly buffer G { float g[]; };
layout(std430, binding = 5) readonly buffer Beta { float beta[]; };
layout(std430, binding = 6) writeonly buffer O { float o[]; };

layout(push_constant) uniform Push {
    uint n_tokens;
    uint n_head_k;
    uint n_head_v;
    uint d_v;
    uint st_shift;   // element offsets inside the bound windows
    uint q_shift;
    uint q_stride;   // floats between token rows
    uint k_shift;
    uint k_stride;
    uint v_shift;
    uint v_stride;
    uint g_shift;
    uint g_stride;
    uint beta_shift;
    uint beta_stride;
    uint o_shift;
    uint o_stride;
    uint flags;      // bit 0: decay per key row, bit 1: L2-normalise q and k, bit 2: tiled head sharing
    float scale;
    float l2_eps;
} pc;

void main() {
    const uint col = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WG + gl_LocalInvocationID.x;
    if (col >= pc.n_head_v * pc.d_v) return;
    const uint h = col / pc.d_v, j = col - h * pc.d_v;
    const uint rep = pc.n_head_v / pc.n_head_k;
    const uint kh = (pc.flags & 4u) != 0u ? h % pc.n_head_k : h / rep;
    const bool per_key = (pc.flags & 1u) != 0u, l2 = (pc.flags & 2u) != 0u;
    const float l2_eps_n = pc.l2_eps / float(D_K), inv_sqrt_n = 1.0 / sqrt(float(D_K));

    float s[D_K];
    const uint sb = pc.st_shift + col * D_K;
    for (uint i = 0; i < D_K; ++i) s[i] = st[sb + i];

    for (uint t = 0; t < pc.n_tokens; ++t) {
        const uint qr = pc.q_shift + t * pc.q_stride + kh * D_K;
        const uint kr = pc.k_shift + t * pc.k_stride + kh * D_K;
        const uint gr = pc.g_shift + t * pc.g_stride + (per_key ? h * D_K : h);
        const float decay = exp(g[gr]);
        // pass 1: decay the column, S[:, j] . k and |k|^2
        float sk = 0.0, kk = 0.0;
        for (uint i = 0; i < D_K; ++i) {
            const float ki = k[kr + i];
            s[i] *= per_key ? exp(g[gr + i]) : decay;
            sk = fma(s[i], ki, sk);
            kk = fma(ki, ki, kk);
        }
        // the norm's factor on k: k_hat = k * kn
        const float kn = l2 ? inv_sqrt_n / sqrt(kk / float(D_K) + l2_eps_n) : 1.0;
        const float d = (v[pc.v_shift + t * pc.v_stride + col] - sk * kn) * beta[pc.beta_shift + t * pc.beta_stride + h];
        const float dk = d * kn;
        // pass 2: the update, S[:, j] . q and |q|^2
        float sq = 0.0, qq = 0.0;
        for (uint i = 0; i < D_K; ++i) {
            const float qi = q[qr + i];
            s[i] = fma(k[kr + i], dk, s[i]);
            sq = fma(s[i], qi, sq);
            qq = fma(qi, qi, qq);
        }
        const float qn = l2 ? inv_sqrt_n / sqrt(qq / float(D_K) + l2_eps_n) : 1.0;
        o[pc.o_shift + t * pc.o_stride + col] = sq * qn * pc.scale;
    }
    for (uint i = 0; i < D_K; ++i) st[sb + i] = s[i];
}
