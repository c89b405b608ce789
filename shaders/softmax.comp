#version 450
// Row softmax y = exp(s x - max(s x)) / sum, one workgroup per row (flat row index over a
// 2-D grid). -inf inputs get probability 0; a row of only -inf gives zeros. y may be the same
// memory as x: each element is read and written by one invocation.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Push {
    uint n;
    uint n_rows;
    uint x_shift;
    uint y_shift;
    float scale;
} pc;

void main() {
    const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= pc.n_rows) return;  // uniform across the workgroup
    const uint t = gl_LocalInvocationID.x;
    const uint xb = pc.x_shift + row * pc.n, yb = pc.y_shift + row * pc.n;
    const float neg_inf = uintBitsToFloat(0xff800000u);

    float m = neg_inf;
    for (uint i = t; i < pc.n; i += WG) m = max(m, pc.scale * x[xb + i]);
    m = wg_max(m);
    if (m == neg_inf) {  // nothing but -inf: no probability mass anywhere
        for (uint i = t; i < pc.n; i += WG) y[yb + i] = 0.0;
        return;
    }
    float s = 0.0;
    for (uint i = t; i < pc.n; i += WG) s += exp(pc.scale * x[xb + i] - m);
    const float inv = 1.0 / wg_sum(s);
    for (uint i = t; i < pc.n; i += WG) y[yb + i] = exp(pc.scale * x[xb + i] - m) * inv;
}
