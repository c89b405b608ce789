#version 450
// The state probe of an RWKV-7 layer: wkv7's state recomputed from its own operands (w, k, v,
// a, b and the state before the pass) in a work copy, so the layer's kernel is untouched. Per
// token and head it writes the Frobenius norm of the head's N x N state after the token and the
// mean of the head's decay w. One workgroup per head; each invocation owns state rows
// i = invocation, invocation + WG, ... (value channels) and updates them as wkv7 does:
//   sa = sum_j a[j] S[i][j];  S[i][j] = S[i][j] w[j] + v[i] k[j] + sa b[j]
// The token's w, k, a and b of the head are staged in shared memory (N <= MAX_N).
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
const uint MAX_N = 128;

layout(std430, binding = 0) readonly buffer State { float st[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) readonly buffer K { float k[]; };
layout(std430, binding = 3) readonly buffer V { float v[]; };
layout(std430, binding = 4) readonly buffer A { float a[]; };
layout(std430, binding = 5) readonly buffer B { float b[]; };
layout(std430, binding = 6) writeonly buffer Out { float outv[]; };
layout(std430, binding = 7) buffer Work { float pr[]; };

layout(push_constant) uniform Push {
    uint n_tokens;
    uint N;          // head size
    uint st_shift;   // element offsets inside the bound windows, and row strides
    uint w_shift;
    uint w_stride;
    uint k_shift;
    uint k_stride;
    uint v_shift;
    uint v_stride;
    uint a_shift;
    uint a_stride;
    uint b_shift;
    uint b_stride;
    uint out_shift;  // [n_tokens][n_head][2]: norm, decay
    uint work_shift; // [n_head N][N]: the state being recomputed
} pc;

shared float sw[MAX_N], sk[MAX_N], sa_[MAX_N], sb[MAX_N];
// The invocations' partial sums of TOKENS_PER_SUM tokens at a time, reduced together.
const uint TOKENS_PER_SUM = 16;
shared float red_sq[TOKENS_PER_SUM * WG], red_w[TOKENS_PER_SUM * WG];

void main() {
    const uint n_head = gl_NumWorkGroups.x;
    const uint h = gl_WorkGroupID.x;
    const uint i0 = gl_LocalInvocationID.x;
    const uint N = pc.N;
    const uint base = h * N * N;

    for (uint e = i0; e < N * N; e += WG) pr[pc.work_shift + base + e] = st[pc.st_shift + base + e];

    for (uint t = 0; t < pc.n_tokens; ++t) {
        float wsum = 0.0;
        for (uint j = i0; j < N; j += WG) {
            const uint c = h * N + j;
            sw[j] = w[pc.w_shift + t * pc.w_stride + c];
            sk[j] = k[pc.k_shift + t * pc.k_stride + c];
            sa_[j] = a[pc.a_shift + t * pc.a_stride + c];
            sb[j] = b[pc.b_shift + t * pc.b_stride + c];
            wsum += sw[j];
        }
        barrier();
        float sq = 0.0;
        for (uint i = i0; i < N; i += WG) {
            const uint row = pc.work_shift + base + i * N;
            const float vi = v[pc.v_shift + t * pc.v_stride + h * N + i];
            float sa = 0.0;
            for (uint j = 0; j < N; ++j) sa += sa_[j] * pr[row + j];
            for (uint j = 0; j < N; ++j) {
                const float s = pr[row + j] * sw[j] + vi * sk[j] + sa * sb[j];
                pr[row + j] = s;
                sq += s * s;
            }
        }
        const uint slot = t % TOKENS_PER_SUM;
        red_sq[slot * WG + i0] = sq;
        red_w[slot * WG + i0] = wsum;
        if (slot == TOKENS_PER_SUM - 1u || t + 1u == pc.n_tokens) {
            barrier();
            // Invocation j sums token t - slot + j over the invocations.
            for (uint j = i0; j <= slot; j += WG) {
                float s2 = 0.0, ws = 0.0;
                for (uint k = 0; k < WG; ++k) {
                    s2 += red_sq[j * WG + k];
                    ws += red_w[j * WG + k];
                }
                const uint o = pc.out_shift + ((t - slot + j) * n_head + h) * 2u;
                outv[o] = sqrt(s2);
                outv[o + 1u] = ws / float(N);
            }
        }
        barrier();  // the next token's staging and sums reuse the shared arrays
    }
}
