#version 450
// Grouped RMSNorm (Mamba-2's norm after the gate): every row of n_group * n values is n_group
// rows of n, each normalised and scaled by its own slice of w [n_group][n]:
//   y = x / sqrt(mean(x^2) + eps) * w[row % n_group]
// One workgroup per group row (flat index over a 2-D grid). x and y may be the same memory.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float w[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Push {
    uint n;         // group length
    uint n_group;
    uint n_rows;    // group rows: tokens * n_group
    uint x_shift;
    uint y_shift;
    uint w_shift;
    uint has_w;
    float eps;
} pc;

void main() {
    const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= pc.n_rows) return;  // uniform across the workgroup
    const uint t = gl_LocalInvocationID.x;
    const uint xb = pc.x_shift + row * pc.n;
    const uint yb = pc.y_shift + row * pc.n;
    const uint wb = pc.w_shift + (row % pc.n_group) * pc.n;
    float s2 = 0.0;
    for (uint i = t; i < pc.n; i += WG) {
        const float v = x[xb + i];
        s2 += v * v;
    }
    const float inv = div_rn(1.0, sqrt_rn(div_rn(wg_sum(s2), float(pc.n)) + pc.eps));
    for (uint i = t; i < pc.n; i += WG) {
        float v = x[xb + i] * inv;
        if (pc.has_w != 0u) v *= w[wb + i];
        y[yb + i] = v;
    }
}
