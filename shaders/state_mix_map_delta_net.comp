#version 450
// A Gated DeltaNet value head's token-to-token mixing map (cpu::delta_net_mix_map's M, its
// derivation there) for a tile of the call's tokens: rows q_first.., columns k_first... From a zero
// state the delta rule is S_t = A_t S_{t-1} + beta_t k_t v_t^T with A_t = (I - beta_t k_t k_t^T) D_t
// (D_t the token's decays exp(g_t), one per head or per key row), so token s's value reaches
// token t's output o_t = scale S_t^T q_t through the vector x_t = A_t .. A_{s+1} beta_s k_s:
//   M[t][s] = scale q_t . x_t  for s <= t, else 0.
// One invocation per key column s carries x (D_K values in registers) from token s to the tile's
// last row: per token x = D_t x, then x -= beta_t k_t (k_t . x), then the row's entry. q and k
// are the layer's (L2-normalised first with flags bit 1, as delta_net.comp: one factor per
// vector, applied to the dot products). Heads as delta_net.comp's.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint D_K = 128;

layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer K { float k[]; };
layout(std430, binding = 2) readonly buffer G { float g[]; };
layout(std430, binding = 3) readonly buffer Beta { float beta[]; };
layout(std430, binding = 4) writeonly buffer Map { float map[]; };

layout(push_constant) uniform Push {
    uint q_first;    // the tile: rows q_first .. q_first + n_q - 1 of the call's tokens,
    uint n_q;        // columns k_first .. k_first + n_k - 1
    uint k_first;
    uint n_k;
    uint head;       // the value head, and the key head it reads
    uint key_head;
    uint q_shift;    // element offsets inside the bound windows, and row strides (floats)
    uint q_stride;
    uint k_shift;
    uint k_stride;
    uint g_shift;
    uint g_stride;
    uint beta_shift;
    uint beta_stride;
    uint map_shift;
    uint map_stride;
    uint flags;      // bit 0: decay per key row, bit 1: L2-normalise q and k
    float scale;
    float l2_eps;
} pc;

void main() {
    const uint c = gl_GlobalInvocationID.x;
    if (c >= pc.n_k) return;
    const uint s = pc.k_first + c;
    const bool per_key = (pc.flags & 1u) != 0u, l2 = (pc.flags & 2u) != 0u;
    const float l2_eps_n = pc.l2_eps / float(D_K), inv_sqrt_n = 1.0 / sqrt(float(D_K));
    const uint q_end = pc.q_first + pc.n_q;

    // the rows above the diagonal
    for (uint t = pc.q_first; t < min(s, q_end); ++t) map[pc.map_shift + (t - pc.q_first) * pc.map_stride + c] = 0.0;

    float x[D_K];
    {
        const uint kr = pc.k_shift + s * pc.k_stride + pc.key_head * D_K;
        float kk = 0.0;
        for (uint i = 0; i < D_K; ++i) kk = fma(k[kr + i], k[kr + i], kk);
        const float kn = l2 ? inv_sqrt_n / sqrt(kk / float(D_K) + l2_eps_n) : 1.0;
        const float bk = beta[pc.beta_shift + s * pc.beta_stride + pc.head] * kn;
        for (uint i = 0; i < D_K; ++i) x[i] = k[kr + i] * bk;
    }
    for (uint t = s; t < q_end; ++t) {
        if (t > s) {
            // x = (I - beta_t k_t k_t^T) D_t x, k_t normalised: the norm's factor squared on the update
            const uint kr = pc.k_shift + t * pc.k_stride + pc.key_head * D_K;
            const uint gr = pc.g_shift + t * pc.g_stride + (per_key ? pc.head * D_K : pc.head);
            const float decay = exp(g[gr]);
            float kx = 0.0, kk = 0.0;
            for (uint i = 0; i < D_K; ++i) {
                const float ki = k[kr + i];
                x[i] *= per_key ? exp(g[gr + i]) : decay;
                kx = fma(ki, x[i], kx);
                kk = fma(ki, ki, kk);
            }
            const float kn = l2 ? inv_sqrt_n / sqrt(kk / float(D_K) + l2_eps_n) : 1.0;
            const float f = beta[pc.beta_shift + t * pc.beta_stride + pc.head] * kx * kn * kn;
            for (uint i = 0; i < D_K; ++i) x[i] = fma(-f, k[kr + i], x[i]);
        }
        if (t >= pc.q_first) {
            const uint qr = pc.q_shift + t * pc.q_stride + pc.key_head * D_K;
            float qx = 0.0, qq = 0.0;
            for (uint i = 0; i < D_K; ++i) {
                const float qi = q[qr + i];
                qx = fma(qi, x[i], qx);
                qq = fma(qi, qi, qq);
            }
            const float qn = l2 ? inv_sqrt_n / sqrt(qq / float(D_K) + l2_eps_n) : 1.0;
            map[pc.map_shift + (t - pc.q_first) * pc.map_stride + c] = qx * qn * pc.scale;
        }
    }
}
