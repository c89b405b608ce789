#version 450
// Llama 4 routing scales each expert's input by its gate weight:
//   out[p, i] = weights[p] * x[p / top_k, i]   for pairs p = token * top_k + slot.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float weights[]; };
layout(std430, binding = 2) writeonly buffer Out { float o[]; };
layout(push_constant) uniform Push {
    uint n_pairs;
    uint n;       // row length
    uint top_k;
    uint x_shift; // element offset of x inside its binding window
} pc;

void main() {
    const uint threads = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    const uint total = pc.n_pairs * pc.n;
    for (uint i = gl_GlobalInvocationID.x; i < total; i += threads) {
        const uint p = i / pc.n, c = i - p * pc.n;
        o[i] = weights[p] * x[pc.x_shift + (p / pc.top_k) * pc.n + c];
    }
}
