#version 450
// Grouped RMSNorm (Mamba-2's norm after the gate): every row of n_group * n values is n_group
// rows of n, each normalised and scaled by its own slice of w [n_group][n]:
//   y = x / sqrt(mean(x^2) + eps) * w[row % n_group]
// One workgroup per group row (flat index over a 2-D grid). x and y may be the same memory.
// The mean of squares is ggml's (a sum in double): a compensated sum in element order by
// invocation 0, the same on every device.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
#define SQ_CHUNK 256u
shared float sq[SQ_CHUNK];

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
    // ggml sums the squares (each rounded to float) in double: here as an unevaluated sum
    // hi + lo, the squares added by thread 0 in order (Knuth's two-sum keeps what each addition
    // drops), so the mean comes out as ggml's float(sum / n) on any device, whatever its
    // reduction order or subgroups.
    float hi = 0.0, lo = 0.0;
    for (uint base = 0; base < pc.n; base += SQ_CHUNK) {
        barrier();
        for (uint i = t; i < SQ_CHUNK && base + i < pc.n; i += WG) {
            const float v = x[xb + base + i];
            sq[i] = v * v;
        }
        barrier();
        if (t == 0u) {
            const uint m = min(SQ_CHUNK, pc.n - base);
            for (uint i = 0; i < m; ++i) {
                precise const float s = hi + sq[i];
                precise const float bb = s - hi;
                precise const float err = (hi - (s - bb)) + (sq[i] - bb);
                hi = s;
                lo += err;
            }
        }
    }
    if (t == 0u) {
        // mean = (hi + lo) / n rounded once: q = hi / n corrected by the remainder.
        const float fn = float(pc.n);
        const float q = div_rn(hi, fn);
        precise const float r = fma(-q, fn, hi) + lo;
        sq[0] = q + r / fn;
    }
    barrier();
    const float mean = sq[0];
    const float inv = div_rn(1.0, sqrt_rn(mean + pc.eps));
    for (uint i = t; i < pc.n; i += WG) {
        float v = x[xb + i] * inv;
        if (pc.has_w != 0u) v *= w[wb + i];
        y[yb + i] = v;
    }
}
