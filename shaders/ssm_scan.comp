#version 450
// Mamba-2's selective scan (scalar decay per head, grouped B/C), sequential over the tokens of
// one sequence. One workgroup per state row (head h, row i of head_dim); each invocation keeps
// up to MAX_PER state entries j = t + m * WG in registers across the tokens. Per token:
//   dt = softplus(dt_raw[h] + dt_bias[h]);  s[j] = s[j] * exp(dt * A[h]) + B[g][j] * x * dt
//   y  = sum_j s[j] * C[g][j]  (+ x * D[h])  (* silu(z))
// The update is `precise` (no fused multiply-add) and y is summed by invocation 0 in state
// order, one fma per term (ggml's scalar loop), so the result does not depend on the
// workgroup size, the subgroups or the driver's reduction order.
// with g = h / (n_head / n_group). The state [n_head][head_dim][d_state] (ggml's layout) is
// read at the start and written back at the end. x, B and C are columns of one token-major
// buffer (xbc: Mamba-2's conv output), dt and z of another (zdt: the in-projection's output).
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
#ifdef ROWS
// One invocation per state row instead: the row's D_STATE entries in registers (a
// specialization constant), summed in state order by the invocation itself, so no barrier and
// no shared memory (the same arithmetic in the same order as the workgroup form). Chosen where
// barriers are dear (CPU drivers such as lavapipe); see ops::ssm_scan.
layout(constant_id = 1) const uint D_STATE = 128;
#else
#define MAX_PER 4
shared float sh_s[MAX_PER * WG];
shared float sh_c[MAX_PER * WG];
#endif

layout(std430, binding = 0) buffer State { float st[]; };
layout(std430, binding = 1) readonly buffer Xbc { float xbc[]; };
layout(std430, binding = 2) readonly buffer Zdt { float zdt[]; };
layout(std430, binding = 3) readonly buffer DtBias { float dt_bias[]; };
layout(std430, binding = 4) readonly buffer Ah { float a[]; };
layout(std430, binding = 5) readonly buffer Dh { float d[]; };
layout(std430, binding = 6) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Push {
    uint n_tokens;
    uint n_head;
    uint head_dim;
    uint d_state;
    uint heads_per_group;
    uint st_shift;
    uint xbc_shift;
    uint xbc_stride;
    uint b_col;      // column of B[0][0] in an xbc row (x starts at column 0)
    uint c_col;
    uint zdt_shift;
    uint zdt_stride;
    uint z_col;
    uint dt_col;
    uint dtb_shift;
    uint a_shift;
    uint d_shift;
    uint y_shift;
    uint y_stride;
    uint flags;      // bit 0: dt bias, bit 1: D, bit 2: gate by silu(z)
} pc;

// ggml_compute_softplus_f32: v above 20, else log1p(exp(v)); log1p through u = 1 + e, exact
// for small e (Goldberg's trick).
float softplus(float v) {
    if (v > 20.0) return v;
    const float e = exp(v);
    const float u = 1.0 + e;
    return u == 1.0 ? e : log(u) * (e / (u - 1.0));
}

#ifdef ROWS
void main() {
    const uint row = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WG + gl_LocalInvocationID.x;
    if (row >= pc.n_head * pc.head_dim) return;
    const uint h = row / pc.head_dim;
    const uint g = h / pc.heads_per_group;
    const uint sb = pc.st_shift + row * D_STATE;
    float s[D_STATE];
    for (uint j = 0; j < D_STATE; ++j) s[j] = st[sb + j];
    const float ah = a[pc.a_shift + h];
    const float dtb = (pc.flags & 1u) != 0u ? dt_bias[pc.dtb_shift + h] : 0.0;
    const float dh = (pc.flags & 2u) != 0u ? d[pc.d_shift + h] : 0.0;
    for (uint tok = 0; tok < pc.n_tokens; ++tok) {
        const uint xr = pc.xbc_shift + tok * pc.xbc_stride;
        const uint zr = pc.zdt_shift + tok * pc.zdt_stride;
        const float sp = softplus(zdt[zr + pc.dt_col + h] + dtb);
        const float dA = exp(sp * ah);
        const float xv = xbc[xr + row];
        const float x_dt = xv * sp;
        const uint br = xr + pc.b_col + g * D_STATE, cr = xr + pc.c_col + g * D_STATE;
        float yv = 0.0;
        for (uint j = 0; j < D_STATE; ++j) {
            precise const float decayed = s[j] * dA;
            precise const float added = xbc[br + j] * x_dt;
            precise const float next = decayed + added;
            s[j] = next;
            yv = fma(next, xbc[cr + j], yv);
        }
        if ((pc.flags & 2u) != 0u) yv += xv * dh;
        if ((pc.flags & 4u) != 0u) {
            const float zv = zdt[zr + pc.z_col + row];
            yv = (zv / (1.0 + exp(-zv))) * yv;
        }
        y[pc.y_shift + tok * pc.y_stride + row] = yv;
    }
    for (uint j = 0; j < D_STATE; ++j) st[sb + j] = s[j];
}
#else
void main() {
    const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= pc.n_head * pc.head_dim) return;  // uniform across the workgroup
    const uint t = gl_LocalInvocationID.x;
    const uint h = row / pc.head_dim;
    const uint g = h / pc.heads_per_group;
    const uint sb = pc.st_shift + row * pc.d_state;

    float s[MAX_PER];
    [[unroll]] for (uint m = 0; m < MAX_PER; ++m) {
        const uint j = t + m * WG;
        s[m] = j < pc.d_state ? st[sb + j] : 0.0;
    }
    const float ah = a[pc.a_shift + h];
    const float dtb = (pc.flags & 1u) != 0u ? dt_bias[pc.dtb_shift + h] : 0.0;
    const float dh = (pc.flags & 2u) != 0u ? d[pc.d_shift + h] : 0.0;

    for (uint tok = 0; tok < pc.n_tokens; ++tok) {
        const uint xr = pc.xbc_shift + tok * pc.xbc_stride;
        const uint zr = pc.zdt_shift + tok * pc.zdt_stride;
        const float sp = softplus(zdt[zr + pc.dt_col + h] + dtb);
        const float dA = exp(sp * ah);
        const float xv = xbc[xr + row];
        const float x_dt = xv * sp;
        [[unroll]] for (uint m = 0; m < MAX_PER; ++m) {
            const uint j = t + m * WG;
            if (j < pc.d_state) {
                precise const float decayed = s[m] * dA;
                precise const float added = xbc[xr + pc.b_col + g * pc.d_state + j] * x_dt;
                precise const float next = decayed + added;
                s[m] = next;
                sh_s[j] = next;
                sh_c[j] = xbc[xr + pc.c_col + g * pc.d_state + j];
            }
        }
        barrier();
        if (t == 0u) {
            // y = sum_j s[j] C[j] in state order, one fma per term: ggml's scalar loop (the
            // order does not depend on the workgroup size or on subgroups).
            float yv = 0.0;
            for (uint j = 0; j < pc.d_state; ++j) yv = fma(sh_s[j], sh_c[j], yv);
            if ((pc.flags & 2u) != 0u) yv += xv * dh;
            if ((pc.flags & 4u) != 0u) {
                const float zv = zdt[zr + pc.z_col + row];
                yv = (zv / (1.0 + exp(-zv))) * yv;
            }
            y[pc.y_shift + tok * pc.y_stride + row] = yv;
        }
        barrier();  // thread 0 has read sh_s and sh_c before the next token writes them
    }
    [[unroll]] for (uint m = 0; m < MAX_PER; ++m) {
        const uint j = t + m * WG;
        if (j < pc.d_state) st[sb + j] = s[m];
    }
}
#endif
