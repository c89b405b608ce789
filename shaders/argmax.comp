#version 450
// Row argmax, one workgroup per row (flat row index over a 2-D grid): the lowest index of the
// largest value; NaNs are never chosen; a row of only NaNs gives 0.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Out { int idx_out[]; };

layout(push_constant) uniform Push {
    uint n;
    uint n_rows;
    uint x_shift;
    uint out_shift;
} pc;

const uint NONE = 0xffffffffu;  // no candidate yet
shared float best_val_sh[WG];
shared uint best_idx_sh[WG];

// Whether candidate (v, i) beats (bv, bi); NONE never wins, and beats nothing.
bool beats(float v, uint i, float bv, uint bi) {
    if (i == NONE) return false;
    if (bi == NONE) return true;
    return v > bv || (v == bv && i < bi);
}

void main() {
    const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= pc.n_rows) return;  // uniform across the workgroup
    const uint t = gl_LocalInvocationID.x;
    const uint xb = pc.x_shift + row * pc.n;

    // Indices rise along each invocation's scan, so a strict > keeps the lowest on ties.
    float bv = 0.0;
    uint bi = NONE;
    for (uint i = t; i < pc.n; i += WG) {
        const float v = x[xb + i];
        if (!isnan(v) && (bi == NONE || v > bv)) {
            bv = v;
            bi = i;
        }
    }
    best_val_sh[t] = bv;
    best_idx_sh[t] = bi;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (t < s && beats(best_val_sh[t + s], best_idx_sh[t + s], best_val_sh[t], best_idx_sh[t])) {
            best_val_sh[t] = best_val_sh[t + s];
            best_idx_sh[t] = best_idx_sh[t + s];
        }
        barrier();
    }
    if (t == 0) idx_out[pc.out_shift + row] = best_idx_sh[0] == NONE ? 0 : int(best_idx_sh[0]);
}
