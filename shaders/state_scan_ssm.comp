#version 450
// The state probe of a Mamba-2 or Mamba-1 layer: the selective scan's state recomputed from the
// scan's own inputs (x, dt, B, A and the state before the pass), token after token, in a work
// copy, so the layer's scan is untouched. Per token and probed head it writes the Frobenius norm
// of the head's state and its decay; for Mamba-2 layers with a mixing map it also stores, per
// token, the head's softplus dt, the running sum L of its log decay dt A, and B (the keys of
// shaders/state_mix_map.comp). One workgroup per head, its state entries strided over the
// invocations; each invocation owns its entries, so only the reductions need barriers (two per
// TOKENS_PER_SUM tokens).
//   Mamba-2 head h (rows = head_dim, channel c = h rows + p, group g):
//     sp = softplus(dt[h] + dt_bias[h]);  s[p][n] = s[p][n] exp(sp A[h]) + B[g][n] (x[c] sp)
//     decay = exp(sp A[h])
//   Mamba-1 (one head, rows = d_inner):
//     sp_c = softplus(dt[c]);  s[c][n] = s[c][n] exp(sp_c A[c][n]) + B[n] (x[c] sp_c)
//     decay = mean over c, n of exp(sp_c A[c][n])
//   norm = sqrt(sum s^2) after the token's update.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;

layout(std430, binding = 0) readonly buffer State { float st[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) readonly buffer Dt { float dt[]; };
layout(std430, binding = 3) readonly buffer Bm { float bm[]; };
layout(std430, binding = 4) readonly buffer Bias { float bias[]; };
layout(std430, binding = 5) readonly buffer Ac { float a[]; };
layout(std430, binding = 6) writeonly buffer Out { float outv[]; };
layout(std430, binding = 7) buffer Work { float pr[]; };  // the state copy, then the key rows

layout(push_constant) uniform Push {
    uint n_tokens;
    uint rows;             // state rows of one probed head
    uint d_state;
    uint heads_per_group;  // Mamba-2 heads sharing one B/C group
    uint flags;            // bit 0: Mamba-1, bit 1: dt_bias, bit 2: store the map's keys
    uint st_shift;         // element offsets inside the bound windows, and row strides
    uint x_shift;
    uint x_stride;
    uint dt_shift;
    uint dt_stride;
    uint b_shift;
    uint b_stride;
    uint bias_shift;
    uint a_shift;
    uint out_shift;        // [n_tokens][n_head][2]: norm, decay
    uint work_shift;       // [n_head rows][d_state]: the state being recomputed
    uint key_shift;        // key rows in Work: [rows][n_head][2] (dt, L), then B [rows][gs]
    uint key_b_shift;
    uint key_first;        // the key row of the pass's first token
    uint key_count;        // the pass's tokens that have a key row (from the first)
    uint key_prev;         // 1: key row key_first - 1 holds the previous token's L
    uint gs;               // n_group * d_state
} pc;

// The invocations' partial sums of TOKENS_PER_SUM tokens at a time, reduced together: two
// barriers per TOKENS_PER_SUM tokens rather than a tree of them per token.
const uint TOKENS_PER_SUM = 16;
shared float red_sq[TOKENS_PER_SUM * WG], red_decay[TOKENS_PER_SUM * WG], da_tok[TOKENS_PER_SUM];

float softplus(float v) { return v > 20.0 ? v : log(1.0 + exp(v)); }

void main() {
    const uint n_head = gl_NumWorkGroups.x;
    const uint h = gl_WorkGroupID.x;
    const uint i = gl_LocalInvocationID.x;
    const bool mamba1 = (pc.flags & 1u) != 0u;
    const bool keys = (pc.flags & 4u) != 0u;
    const uint n = pc.rows * pc.d_state;  // this head's state entries
    const uint g = mamba1 ? 0u : h / pc.heads_per_group;
    const uint base = h * n;              // the head's first entry in the state

    for (uint e = i; e < n; e += WG) pr[pc.work_shift + base + e] = st[pc.st_shift + base + e];

    float L = 0.0;
    if (keys && pc.key_prev != 0u) L = pr[pc.key_shift + ((pc.key_first - 1u) * n_head + h) * 2u + 1u];
    for (uint t = 0; t < pc.n_tokens; ++t) {
        float sp_head = 0.0, da_head = 0.0;
        if (!mamba1) {
            float v = dt[pc.dt_shift + t * pc.dt_stride + h];
            if ((pc.flags & 2u) != 0u) v += bias[pc.bias_shift + h];
            sp_head = softplus(v);
            da_head = exp(sp_head * a[pc.a_shift + h]);
        }
        float sq = 0.0, decay = 0.0;
        for (uint e = i; e < n; e += WG) {
            const uint p = e / pc.d_state, j = e - p * pc.d_state;
            const uint c = h * pc.rows + p;
            float sp = sp_head, da = da_head;
            if (mamba1) {
                sp = softplus(dt[pc.dt_shift + t * pc.dt_stride + c]);
                da = exp(sp * a[pc.a_shift + c * pc.d_state + j]);
                decay += da;
            }
            precise const float x_dt = x[pc.x_shift + t * pc.x_stride + c] * sp;
            precise const float s = pr[pc.work_shift + base + e] * da + bm[pc.b_shift + t * pc.b_stride + g * pc.d_state + j] * x_dt;
            pr[pc.work_shift + base + e] = s;
            sq += s * s;
        }
        const uint slot = t % TOKENS_PER_SUM;
        red_sq[slot * WG + i] = sq;
        red_decay[slot * WG + i] = decay;
        if (i == 0u) da_tok[slot] = da_head;
        if (slot == TOKENS_PER_SUM - 1u || t + 1u == pc.n_tokens) {
            barrier();
            // Invocation j sums token t - slot + j over the invocations.
            for (uint j = i; j <= slot; j += WG) {
                float s2 = 0.0, d = 0.0;
                for (uint k = 0; k < WG; ++k) {
                    s2 += red_sq[j * WG + k];
                    d += red_decay[j * WG + k];
                }
                const uint o = pc.out_shift + ((t - slot + j) * n_head + h) * 2u;
                outv[o] = sqrt(s2);
                outv[o + 1u] = mamba1 ? d / float(n) : da_tok[j];
            }
            barrier();  // the next TOKENS_PER_SUM tokens reuse the shared arrays
        }
        if (keys && t < pc.key_count) {
            const uint row = pc.key_first + t;
            L += sp_head * a[pc.a_shift + h];
            if (i == 0u) {
                pr[pc.key_shift + (row * n_head + h) * 2u] = sp_head;
                pr[pc.key_shift + (row * n_head + h) * 2u + 1u] = L;
            }
            // The group's first head stores its B row.
            if (h % pc.heads_per_group == 0u)
                for (uint j = i; j < pc.d_state; j += WG)
                    pr[pc.key_b_shift + row * pc.gs + g * pc.d_state + j] = bm[pc.b_shift + t * pc.b_stride + g * pc.d_state + j];
        }
    }
}
