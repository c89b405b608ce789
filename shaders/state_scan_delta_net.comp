#version 450
// The state probe of a Gated DeltaNet layer: the delta rule's state recomputed from its own
// operands (k, v, g, beta and the state before the pass) in a work copy, so the layer's kernel is
// untouched. Per token and value head it writes the Frobenius norm of the head's d_k x d_v state
// after the token and its decay (exp(g) of the head, or the mean of exp(g) over the key rows with
// flags bit 0). One workgroup per value head; each invocation owns state columns
// j = invocation, invocation + WG, ... and updates them as delta_net.comp does:
//   s *= exp(g);  d = beta (v[j] - s . k);  s += k d
// with k L2-normalised first with flags bit 1 (one factor per token, applied to the dot product
// and the update). The token's k and decays are staged in shared memory. Heads as
// delta_net.comp's (the host passes the key head of each value head's group: value head h reads
// key head h / rep, or h % n_head_k with flags bit 2).
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint D_K = 128;

layout(std430, binding = 0) readonly buffer State { float st[]; };
layout(std430, binding = 1) readonly buffer K { float k[]; };
layout(std430, binding = 2) readonly buffer V { float v[]; };
layout(std430, binding = 3) readonly buffer G { float g[]; };
layout(std430, binding = 4) readonly buffer Beta { float beta[]; };
layout(std430, binding = 5) writeonly buffer Out { float outv[]; };
layout(std430, binding = 6) buffer Work { float pr[]; };

layout(push_constant) uniform Push {
    uint n_tokens;
    uint n_head_k;
    uint d_v;
    uint st_shift;   // element offsets inside the bound windows, and row strides
    uint k_shift;
    uint k_stride;
    uint v_shift;
    uint v_stride;
    uint g_shift;
    uint g_stride;
    uint beta_shift;
    uint beta_stride;
    uint out_shift;  // [n_tokens][n_head_v][2]: norm, decay
    uint work_shift; // [n_head_v d_v][D_K]: the state being recomputed
    uint flags;      // bit 0: decay per key row, bit 1: L2-normalise k, bit 2: tiled head sharing
    float l2_eps;
} pc;

shared float sk[D_K], sd[D_K];
shared float s_kn;
// The invocations' partial sums of TOKENS_PER_SUM tokens at a time, reduced together.
const uint TOKENS_PER_SUM = 16;
shared float red_sq[TOKENS_PER_SUM * WG];
shared float s_decay[TOKENS_PER_SUM];

void main() {
    const uint n_head_v = gl_NumWorkGroups.x;
    const uint h = gl_WorkGroupID.x;
    const uint i0 = gl_LocalInvocationID.x;
    const uint rep = n_head_v / pc.n_head_k;
    const uint kh = (pc.flags & 4u) != 0u ? h % pc.n_head_k : h / rep;
    const bool per_key = (pc.flags & 1u) != 0u, l2 = (pc.flags & 2u) != 0u;
    const uint base = h * pc.d_v * D_K;

    for (uint e = i0; e < pc.d_v * D_K; e += WG) pr[pc.work_shift + base + e] = st[pc.st_shift + base + e];

    for (uint t = 0; t < pc.n_tokens; ++t) {
        const uint gr = pc.g_shift + t * pc.g_stride + (per_key ? h * D_K : h);
        for (uint i = i0; i < D_K; i += WG) {
            sk[i] = k[pc.k_shift + t * pc.k_stride + kh * D_K + i];
            sd[i] = exp(g[per_key ? gr + i : gr]);
        }
        barrier();
        const uint slot = t % TOKENS_PER_SUM;
        if (i0 == 0u) {
            // the norm's factor on k (delta_net.comp's) and the token's decay
            float kk = 0.0, ds = 0.0;
            for (uint i = 0; i < D_K; ++i) {
                kk = fma(sk[i], sk[i], kk);
                ds += sd[i];
            }
            s_kn = l2 ? 1.0 / sqrt(float(D_K)) / sqrt(kk / float(D_K) + pc.l2_eps / float(D_K)) : 1.0;
            s_decay[slot] = ds / float(D_K);
        }
        barrier();
        const float kn = s_kn;
        const float bt = beta[pc.beta_shift + t * pc.beta_stride + h];
        float sq = 0.0;
        for (uint j = i0; j < pc.d_v; j += WG) {
            const uint row = pc.work_shift + base + j * D_K;
            float sk_dot = 0.0;
            for (uint i = 0; i < D_K; ++i) {
                const float s = pr[row + i] * sd[i];
                pr[row + i] = s;
                sk_dot = fma(s, sk[i], sk_dot);
            }
            const float d = (v[pc.v_shift + t * pc.v_stride + h * pc.d_v + j] - sk_dot * kn) * bt * kn;
            for (uint i = 0; i < D_K; ++i) {
                const float s = fma(sk[i], d, pr[row + i]);
                pr[row + i] = s;
                sq = fma(s, s, sq);
            }
        }
        red_sq[slot * WG + i0] = sq;
        if (slot == TOKENS_PER_SUM - 1u || t + 1u == pc.n_tokens) {
            barrier();
            // Invocation j sums token t - slot + j over the invocations.
            for (uint j = i0; j <= slot; j += WG) {
                float s2 = 0.0;
                for (uint w = 0; w < WG; ++w) s2 += red_sq[j * WG + w];
                const uint o = pc.out_shift + ((t - slot + j) * n_head_v + h) * 2u;
                outv[o] = sqrt(s2);
                outv[o + 1u] = s_decay[j];
            }
        }
        barrier();  // the next token's staging and sums reuse the shared arrays
    }
}
