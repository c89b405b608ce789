#version 450
// Counting sort of the routed (token, slot) pairs by expert, in one workgroup, so that prefill
// can run one tiled matmul over every active expert. Pair p = token * top_k + slot; its expert
// is experts[p]. Output (int32, from out_base):
//   [0, N_EXPERT)                counts: pairs routed to each expert
//   [N_EXPERT, 2 N_EXPERT + 1)   offsets: exclusive prefix sums of the counts (last: the total)
//   [2 N_EXPERT + 1, + n_pairs)  pair indices grouped by expert, ascending within an expert
// Pairs whose expert id lies outside [0, N_EXPERT) are left out. The order is deterministic:
// pairs are placed WG at a time, each at its expert's cursor plus the number of earlier pairs
// of the same chunk with the same expert.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256u;  // threads
layout(constant_id = 1) const uint N_EXPERT = 8u;

layout(std430, binding = 0) readonly buffer Experts { int experts[]; };  // [n_pairs]
layout(std430, binding = 1) buffer Sorted { int sorted[]; };             // see above

layout(push_constant) uniform Push {
    uint n_pairs;
    uint experts_base;  // element offsets inside the bound windows
    uint out_base;
} pc;

const uint NONE = 0xffffffffu;

shared uint cursor[N_EXPERT];  // counts, then the next free slot of each expert
shared uint chunk_expert[WG];  // the experts of the chunk being placed

uint expert_of(uint p) {
    const int e = experts[pc.experts_base + p];
    return e >= 0 && uint(e) < N_EXPERT ? uint(e) : NONE;
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    for (uint e = tid; e < N_EXPERT; e += WG) cursor[e] = 0u;
    barrier();
    for (uint p = tid; p < pc.n_pairs; p += WG) {
        const uint e = expert_of(p);
        if (e != NONE) atomicAdd(cursor[e], 1u);
    }
    barrier();
    if (tid == 0u) {
        uint total = 0u;
        for (uint e = 0u; e < N_EXPERT; ++e) {
            const uint c = cursor[e];
            sorted[pc.out_base + e] = int(c);
            sorted[pc.out_base + N_EXPERT + e] = int(total);
            cursor[e] = total;
            total += c;
        }
        sorted[pc.out_base + 2u * N_EXPERT] = int(total);
    }
    barrier();

    const uint list = pc.out_base + 2u * N_EXPERT + 1u;
    for (uint base = 0u; base < pc.n_pairs; base += WG) {
        const uint p = base + tid;
        const uint e = p < pc.n_pairs ? expert_of(p) : NONE;
        chunk_expert[tid] = e;
        barrier();
        uint rank = 0u;  // earlier pairs of this chunk with the same expert
        bool last = true;  // no later pair of this chunk has it
        if (e != NONE) {
            for (uint i = 0u; i < WG; ++i) {
                if (chunk_expert[i] == e) {
                    if (i < tid) ++rank;
                    else if (i > tid) last = false;
                }
            }
            sorted[list + cursor[e] + rank] = int(p);
        }
        barrier();  // every cursor read above happens before the updates below
        if (e != NONE && last) cursor[e] += rank + 1u;
        barrier();
    }
}
