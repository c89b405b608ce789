#version 450
// Expert-load probe: for expert e (one workgroup each, flat index over a 2-D grid),
//   load[e] (+)= (pairs routed to e, sum of their gate weights)
// over the n_pairs routed (token, slot) pairs. Sums are reduced in a fixed order, so repeated
// runs give the same bits.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64u;  // threads (a power of two)

#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer Experts { int experts[]; };  // [n_pairs] from ids_base
layout(std430, binding = 1) readonly buffer W { float weights[]; };      // [n_pairs] from w_base
layout(std430, binding = 2) buffer Load { float load[]; };               // [n_expert, 2] from load_base

layout(push_constant) uniform Push {
    uint n_pairs;
    uint n_expert;
    uint ids_base;     // element offsets inside the bound windows
    uint w_base;
    uint load_base;
    uint accumulate;   // 1: add to the buffer's values (counting over several steps)
} pc;

void main() {
    const uint e = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (e >= pc.n_expert) return;  // uniform across the workgroup
    float count = 0.0, weight = 0.0;
    for (uint p = gl_LocalInvocationID.x; p < pc.n_pairs; p += WG) {
        if (experts[pc.ids_base + p] == int(e)) {
            count += 1.0;
            weight += weights[pc.w_base + p];
        }
    }
    count = wg_sum(count);
    weight = wg_sum(weight);
    if (gl_LocalInvocationID.x == 0u) {
        const uint li = pc.load_base + 2u * e;
        load[li] = pc.accumulate != 0u ? load[li] + count : count;
        load[li + 1u] = pc.accumulate != 0u ? load[li + 1u] + weight : weight;
    }
}
