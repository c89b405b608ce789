#version 450
// Per (query row, head) detail of attention probabilities (engine/ops/attention_detail.cpp),
// one workgroup per row (flat index over a 2-D grid):
//   top       the row's top_k largest key probabilities with their key positions, largest
//             first; equal probabilities in key-position order. Pairs (float bits, position);
//             a row with fewer visible keys ends in (0, -1).
//   thumb     [n_head][cells][cells] max-pooled map: cell (query position / cell - query_cell0,
//             key position / cell) max-combines the row's probabilities. A probability p >= 0
//             orders as its bit pattern does, so atomicMax on the bits is a float max; the
//             caller zeroes the cells before the first block.
// probs is ops::attention's [n_q, n_head, n_kv] (a learned sink's column after the rows is not
// read); slots whose kv_pos is negative (empty) and probabilities 0 (masked) are skipped.
#include "common.glsl"
#define WG 64u
#define KMAX 16u
#define SMAX 256u
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer P { float probs[]; };
layout(std430, binding = 1) readonly buffer QPos { int q_pos[]; };
layout(std430, binding = 2) readonly buffer KVPos { int kv_pos[]; };
layout(std430, binding = 3) writeonly buffer Top { uint top[]; };
layout(std430, binding = 4) buffer Thumb { uint thumb[]; };

layout(push_constant) uniform Push {
    uint n_q;
    uint n_head;
    uint n_kv;
    uint top_k;        // 0..KMAX (0: no top)
    uint cells;        // 0..SMAX (0: no thumbnail)
    uint cell;         // positions per cell
    uint query_cell0;  // the thumbnail row of the buffer's first row
    uint p_shift;
    uint qp_shift;
    uint kp_shift;
    uint t_shift;
    uint m_shift;
} pc;

shared uint bins[SMAX];
shared float cand_p[WG * KMAX];
shared int cand_k[WG * KMAX];

// (p, k) comes before (p2, k2): more probable, or as probable and an earlier key.
bool before(float p, int k, float p2, int k2) { return p > p2 || (p == p2 && k < k2); }

void main() {
    const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= pc.n_q * pc.n_head) return;  // uniform across the workgroup
    const uint t = gl_LocalInvocationID.x;
    const uint q = row / pc.n_head, h = row % pc.n_head;
    const uint base = pc.p_shift + row * pc.n_kv;
    const uint K = pc.top_k, S = pc.cells;

    for (uint i = t; i < S; i += WG) bins[i] = 0u;
    barrier();

    // Each invocation's own best K of its keys, sorted; -1 marks an empty place.
    float lp[KMAX];
    int lk[KMAX];
    for (uint i = 0; i < KMAX; ++i) {
        lp[i] = -1.0;
        lk[i] = -1;
    }
    for (uint k = t; k < pc.n_kv; k += WG) {
        const int kp = kv_pos[pc.kp_shift + k];
        const float p = probs[base + k];
        if (kp < 0 || !(p > 0.0)) continue;
        if (S > 0u) {
            const uint c = uint(kp) / pc.cell;
            if (c < S) atomicMax(bins[c], floatBitsToUint(p));
        }
        if (K > 0u && before(p, kp, lp[K - 1u], lk[K - 1u])) {
            uint j = K - 1u;
            for (; j > 0u && before(p, kp, lp[j - 1u], lk[j - 1u]); --j) {
                lp[j] = lp[j - 1u];
                lk[j] = lk[j - 1u];
            }
            lp[j] = p;
            lk[j] = kp;
        }
    }

    if (K > 0u) {
        // Tree merge of the sorted lists: at each level invocation t keeps the best K of its
        // list and list t + s.
        for (uint i = 0; i < K; ++i) {
            cand_p[t * KMAX + i] = lp[i];
            cand_k[t * KMAX + i] = lk[i];
        }
        barrier();
        for (uint s = WG / 2u; s > 0u; s >>= 1u) {
            if (t < s) {
                uint a = t * KMAX, b = (t + s) * KMAX;
                for (uint i = 0; i < K; ++i) {
                    if (before(cand_p[a], cand_k[a], cand_p[b], cand_k[b])) {
                        lp[i] = cand_p[a];
                        lk[i] = cand_k[a];
                        ++a;
                    } else {
                        lp[i] = cand_p[b];
                        lk[i] = cand_k[b];
                        ++b;
                    }
                }
            }
            barrier();  // every read of this level is done before the lists are rewritten
            if (t < s)
                for (uint i = 0; i < K; ++i) {
                    cand_p[t * KMAX + i] = lp[i];
                    cand_k[t * KMAX + i] = lk[i];
                }
            barrier();
        }
        if (t == 0u)
            for (uint i = 0; i < K; ++i) {
                const uint o = pc.t_shift + (row * K + i) * 2u;
                const bool some = lk[i] >= 0;
                top[o] = floatBitsToUint(some ? lp[i] : 0.0);
                top[o + 1u] = uint(some ? lk[i] : -1);
            }
    }

    if (S > 0u) {
        barrier();  // the row's bins are complete
        const int qc = q_pos[pc.qp_shift + q] / int(pc.cell) - int(pc.query_cell0);
        if (qc >= 0 && uint(qc) < S)
            for (uint i = t; i < S; i += WG)
                if (bins[i] != 0u) atomicMax(thumb[pc.m_shift + (h * S + uint(qc)) * S + i], bins[i]);
    }
}
