#version 450
// Mamba-1's selective scan (a decay per channel and state, one group of B/C), sequential over
// the tokens of one sequence. One invocation per channel c keeps its D_STATE state entries and
// its row of A in registers across the tokens (D_STATE is a specialization constant: Mamba-1
// models use 16), so no barrier is needed. Per token:
//   sp = softplus(dt[c]);  s[j] = s[j] * exp(sp * A[c][j]) + B[j] * (x[c] * sp)
//   y  = sum_j s[j] * C[j]  (+ x[c] * D[c])  (* silu(z[c]))
// as ggml's scalar loop: the update is `precise` (no fused multiply-add), y is summed in state
// order with one fma per term, and x * D is rounded before it is added (llama.cpp's ggml_mul
// then ggml_add). The state [d_inner][D_STATE] is read at the start and written at the end.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint D_STATE = 16;

layout(std430, binding = 0) buffer State { float st[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) readonly buffer Dt { float dt[]; };
layout(std430, binding = 3) readonly buffer Bc { float bc[]; };  // B and C: columns of one buffer
layout(std430, binding = 4) readonly buffer Z { float z[]; };
layout(std430, binding = 5) readonly buffer Ac { float a[]; };
layout(std430, binding = 6) readonly buffer Dc { float d[]; };
layout(std430, binding = 7) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Push {
    uint n_tokens;
    uint d_inner;
    uint st_shift;   // element offsets inside the bound windows
    uint x_shift;
    uint x_stride;   // floats between token rows
    uint dt_shift;
    uint dt_stride;
    uint b_shift;
    uint c_shift;
    uint bc_stride;
    uint z_shift;
    uint z_stride;
    uint a_shift;
    uint d_shift;
    uint y_shift;
    uint y_stride;
    uint flags;      // bit 0: D, bit 1: gate by silu(z)
} pc;

// ggml_compute_softplus_f32: v above 20, else log1p(exp(v)); log1p through u = 1 + e, exact
// for small e (Goldberg's trick).
float softplus(float v) {
    if (v > 20.0) return v;
    const float e = exp(v);
    const float u = 1.0 + e;
    return u == 1.0 ? e : log(u) * (e / (u - 1.0));
}

void main() {
    const uint c = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WG + gl_LocalInvocationID.x;
    if (c >= pc.d_inner) return;
    float s[D_STATE];
    float ac[D_STATE];
    for (uint j = 0; j < D_STATE; ++j) {
        s[j] = st[pc.st_shift + c * D_STATE + j];
        ac[j] = a[pc.a_shift + c * D_STATE + j];
    }
    const bool has_d = (pc.flags & 1u) != 0u, has_z = (pc.flags & 2u) != 0u;
    const float dc = has_d ? d[pc.d_shift + c] : 0.0;
    for (uint t = 0; t < pc.n_tokens; ++t) {
        const float xv = x[pc.x_shift + t * pc.x_stride + c];
        const float sp = softplus(dt[pc.dt_shift + t * pc.dt_stride + c]);
        const float x_dt = xv * sp;
        const uint br = pc.b_shift + t * pc.bc_stride, cr = pc.c_shift + t * pc.bc_stride;
        float yv = 0.0;
        for (uint j = 0; j < D_STATE; ++j) {
            precise const float decayed = s[j] * exp(sp * ac[j]);
            precise const float added = bc[br + j] * x_dt;
            precise const float next = decayed + added;
            s[j] = next;
            yv = fma(next, bc[cr + j], yv);
        }
        if (has_d) {
            precise const float skip = xv * dc;
            precise const float sum = yv + skip;
            yv = sum;
        }
        if (has_z) {
            const float zv = z[pc.z_shift + t * pc.z_stride + c];
            yv = (zv / (1.0 + exp(-zv))) * yv;
        }
        y[pc.y_shift + t * pc.y_stride + c] = yv;
    }
    for (uint j = 0; j < D_STATE; ++j) st[pc.st_shift + c * D_STATE + j] = s[j];
}
