#version 450
// Weighted sum of the experts' outputs back into the token rows (MoE scatter-add):
//   out[t, c] (+)= sum_k weight[t, k] * y[t * top_k + k, c]
// one invocation per output value (grid-stride), slots summed in order k = 0, 1, ...
#include "common.glsl"
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Y { float y[]; };        // [n_tokens * top_k, n] from y_base
layout(std430, binding = 1) readonly buffer W { float weights[]; };  // [n_tokens, top_k] from w_base
layout(std430, binding = 2) buffer Out { float o[]; };               // [n_tokens, n] from out_base

layout(push_constant) uniform Push {
    uint n;           // values per row
    uint n_tokens;
    uint top_k;
    uint y_base;      // element offsets inside the bound windows
    uint w_base;
    uint out_base;
    uint accumulate;  // 1: out += the sum (the residual add fused in)
} pc;

void main() {
    const uint total = pc.n * pc.n_tokens;
    const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < total; i += step) {
        const uint t = i / pc.n, c = i % pc.n;
        float sum = 0.0;
        for (uint k = 0u; k < pc.top_k; ++k) {
            const uint pair = t * pc.top_k + k;
            sum += weights[pc.w_base + pair] * y[pc.y_base + pair * pc.n + c];
        }
        const uint oi = pc.out_base + i;
        o[oi] = pc.accumulate != 0u ? o[oi] + sum : sum;
    }
}
