#version 450
// Per (query row, head) statistics of attention probabilities (engine/ops/attention_summary.cpp),
// one workgroup per row (flat index over a 2-D grid):
//   stats[row] = {entropy, first-key mass, distance, max probability}
// entropy   -sum p ln p over the keys and the learned sink (nats)
// first     the probability of the key at position 0 plus the sink's
// distance  sum_k p_k (q_pos - kv_pos[k]): the mean distance back to what the row attends
// max       the largest key probability
// probs is ops::attention's [n_q, n_head, n_kv] (+ with sinks [n_q, n_head] after the rows);
// slots whose kv_pos is negative (empty) count as masked.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer P { float probs[]; };
layout(std430, binding = 1) readonly buffer QPos { int q_pos[]; };
layout(std430, binding = 2) readonly buffer KVPos { int kv_pos[]; };
layout(std430, binding = 3) writeonly buffer S { float stats[]; };

layout(push_constant) uniform Push {
    uint n_q;
    uint n_head;
    uint n_kv;
    uint flags;  // 1: sinks follow the rows
    uint p_shift;
    uint qp_shift;
    uint kp_shift;
    uint s_shift;
} pc;

void main() {
    const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= pc.n_q * pc.n_head) return;  // uniform across the workgroup
    const uint t = gl_LocalInvocationID.x;
    const uint q = row / pc.n_head;
    const uint base = pc.p_shift + row * pc.n_kv;
    const int qpos = q_pos[pc.qp_shift + q];

    float ent = 0.0, first = 0.0, dist = 0.0, mx = 0.0;
    for (uint k = t; k < pc.n_kv; k += WG) {
        const int kp = kv_pos[pc.kp_shift + k];
        const float p = probs[base + k];
        if (kp < 0 || !(p > 0.0)) continue;
        ent -= p * log(p);
        if (kp == 0) first += p;
        dist += p * float(qpos - kp);
        mx = max(mx, p);
    }
    ent = wg_sum(ent);
    first = wg_sum(first);
    dist = wg_sum(dist);
    mx = wg_max(mx);
    if (t == 0) {
        if ((pc.flags & 1u) != 0u) {
            const float s = probs[pc.p_shift + pc.n_q * pc.n_head * pc.n_kv + row];
            if (s > 0.0) {
                ent -= s * log(s);
                first += s;
            }
        }
        const uint o = pc.s_shift + row * 4u;
        stats[o] = ent;
        stats[o + 1u] = first;
        stats[o + 2u] = dist;
        stats[o + 3u] = mx;
    }
}
