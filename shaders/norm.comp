#version 450
// Row normalisation, one workgroup per row (flat row index over a 2-D grid).
//   RMS_NORM:   y = x / sqrt(mean(x^2) + eps) * w              (Zhang & Sennrich 2019)
//   LAYER_NORM: y = (x - mean) / sqrt(var + eps) * w + b        (Ba et al. 2016), var = mean((x - mean)^2)
// w and b are optional (flags). x and y may be the same memory: every element is read and
// written by the same invocation.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float w[]; };
layout(std430, binding = 2) readonly buffer Bias { float b[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Push {
    uint n;         // row length
    uint n_rows;
    uint stride;    // floats between rows (x and y)
    uint x_shift;   // element offsets inside the bound windows
    uint y_shift;
    uint w_shift;
    uint b_shift;
    uint flags;     // bit 0: weight, bit 1: bias
    float eps;
} pc;

void main() {
    const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= pc.n_rows) return;  // uniform across the workgroup
    const uint t = gl_LocalInvocationID.x;
    const uint xb = pc.x_shift + row * pc.stride;
    const uint yb = pc.y_shift + row * pc.stride;

#ifdef LAYER_NORM
    float s = 0.0;
    for (uint i = t; i < pc.n; i += WG) s += x[xb + i];
    const float mean = div_rn(wg_sum(s), float(pc.n));
    float s2 = 0.0;
    for (uint i = t; i < pc.n; i += WG) {
        const float d = x[xb + i] - mean;
        s2 += d * d;
    }
    const float inv = div_rn(1.0, sqrt_rn(div_rn(wg_sum(s2), float(pc.n)) + pc.eps));
#else
    const float mean = 0.0;
    float s2 = 0.0;
    for (uint i = t; i < pc.n; i += WG) {
        const float v = x[xb + i];
        s2 += v * v;
    }
    const float inv = div_rn(1.0, sqrt_rn(div_rn(wg_sum(s2), float(pc.n)) + pc.eps));
#endif

    const bool has_w = (pc.flags & 1u) != 0u, has_b = (pc.flags & 2u) != 0u;
    for (uint i = t; i < pc.n; i += WG) {
        float v = (x[xb + i] - mean) * inv;
        if (has_w) v *= w[pc.w_shift + i];
        if (has_b) v += b[pc.b_shift + i];
        y[yb + i] = v;
    }
}
