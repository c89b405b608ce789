#version 450
// Mamba-2's selective scan (ssm_scan.comp's math) in chunks of CHUNK tokens, for prompts: the
// state-space dual (SSD) form. One workgroup per head h; the chunks run in order, each in
// parallel over its tokens. With the per-token log decay l_u = dt_u * A[h] and its running sum
// over the chunk cs_t = l_0 + ... + l_t, the state before the chunk S0 [head_dim][d_state]:
//   y_t[i]  = exp(cs_t) (C_t . S0[i])  +  sum_{u <= t} exp(cs_t - cs_u) dt_u (C_t . B_u) x_u[i]
//   S[i][j] = exp(cs_last) S0[i][j]   +  sum_u exp(cs_last - cs_u) dt_u B_u[j] x_u[i]
// (the sequential recurrence unrolled over the chunk: the decay from token u to t is the
// product of the dA in between, exp of the sum of their logs). The first sum is a lower
// triangular (masked) L x L matrix times the chunk's x, the second the state's update at once.
// y then gets x D[h] and the gate silu(z) as in the sequential kernel. The state lives in its
// buffer (ggml's layout [n_head][head_dim][d_state]) across the chunks: the workgroup reads the
// old state, then, after a barrier, overwrites it.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint CHUNK = 64;

shared float sh_w[CHUNK * CHUNK];  // [t][u]: exp(cs_t - cs_u) dt_u (C_t . B_u) for u <= t
shared float sh_cs[CHUNK];         // cs_t, the running sum of the log decays
shared float sh_dt[CHUNK];         // dt_u after the bias and softplus
shared float sh_wl[CHUNK];         // exp(cs_last - cs_u) dt_u (first a scratch for the running sum)

layout(std430, binding = 0) coherent buffer State { float st[]; };
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

// ggml_compute_softplus_f32, as ssm_scan.comp.
float softplus(float v) {
    if (v > 20.0) return v;
    const float e = exp(v);
    const float u = 1.0 + e;
    return u == 1.0 ? e : log(u) * (e / (u - 1.0));
}

void main() {
    const uint h = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (h >= pc.n_head) return;  // uniform across the workgroup
    const uint t = gl_LocalInvocationID.x;
    const uint P = pc.head_dim, N = pc.d_state;
    const uint g = h / pc.heads_per_group;
    const uint sb = pc.st_shift + h * P * N;
    const uint x_col = h * P, b_col = pc.b_col + g * N, c_col = pc.c_col + g * N;
    const float ah = a[pc.a_shift + h];
    const float dtb = (pc.flags & 1u) != 0u ? dt_bias[pc.dtb_shift + h] : 0.0;
    const float dh = (pc.flags & 2u) != 0u ? d[pc.d_shift + h] : 0.0;

    for (uint c0 = 0; c0 < pc.n_tokens; c0 += CHUNK) {
        const uint n = min(CHUNK, pc.n_tokens - c0);
        const uint xr0 = pc.xbc_shift + c0 * pc.xbc_stride;  // the chunk's first xbc row
        for (uint u = t; u < n; u += WG) {
            const float sp = softplus(zdt[pc.zdt_shift + (c0 + u) * pc.zdt_stride + pc.dt_col + h] + dtb);
            sh_dt[u] = sp;
            sh_cs[u] = sp * ah;
        }
        barrier();
        for (uint u = t; u < n; u += WG) {
            float s = 0.0;
            for (uint v = 0; v <= u; ++v) s += sh_cs[v];
            sh_wl[u] = s;
        }
        barrier();
        for (uint u = t; u < n; u += WG) sh_cs[u] = sh_wl[u];
        barrier();
        const float cs_last = sh_cs[n - 1];
        // The lower triangle (u <= ti, the only part read), e = ti (ti + 1) / 2 + u.
        for (uint e = t; e < n * (n + 1) / 2; e += WG) {
            uint ti = uint((sqrt(8.0 * float(e) + 1.0) - 1.0) * 0.5);
            while (ti * (ti + 1) / 2 > e) --ti;  // the float root may be one off
            while ((ti + 1) * (ti + 2) / 2 <= e) ++ti;
            const uint u = e - ti * (ti + 1) / 2;
            const uint cr = xr0 + ti * pc.xbc_stride + c_col, br = xr0 + u * pc.xbc_stride + b_col;
            float cb = 0.0;
            for (uint j = 0; j < N; ++j) cb = fma(xbc[cr + j], xbc[br + j], cb);
            sh_w[ti * CHUNK + u] = cb * exp(sh_cs[ti] - sh_cs[u]) * sh_dt[u];
        }
        for (uint u = t; u < n; u += WG) sh_wl[u] = exp(cs_last - sh_cs[u]) * sh_dt[u];
        barrier();
        // Outputs, from the state before the chunk.
        for (uint e = t; e < n * P; e += WG) {
            const uint ti = e / P, i = e % P;
            const uint xr = xr0 + ti * pc.xbc_stride;
            float acc = 0.0;
            for (uint u = 0; u <= ti; ++u) acc = fma(sh_w[ti * CHUNK + u], xbc[xr0 + u * pc.xbc_stride + x_col + i], acc);
            float cs0 = 0.0;
            for (uint j = 0; j < N; ++j) cs0 = fma(xbc[xr + c_col + j], st[sb + i * N + j], cs0);
            float yv = fma(exp(sh_cs[ti]), cs0, acc);
            const float xv = xbc[xr + x_col + i];
            if ((pc.flags & 2u) != 0u) yv += xv * dh;
            if ((pc.flags & 4u) != 0u) {
                const float zv = zdt[pc.zdt_shift + (c0 + ti) * pc.zdt_stride + pc.z_col + x_col + i];
                yv = (zv / (1.0 + exp(-zv))) * yv;
            }
            y[pc.y_shift + (c0 + ti) * pc.y_stride + x_col + i] = yv;
        }
        memoryBarrierBuffer();
        barrier();  // every read of the old state is done before it is overwritten
        const float decay = exp(cs_last);
        for (uint e = t; e < P * N; e += WG) {
            const uint i = e / N, j = e % N;
            float acc = 0.0;
            for (uint u = 0; u < n; ++u) {
                const uint xr = xr0 + u * pc.xbc_stride;
                acc = fma(sh_wl[u] * xbc[xr + x_col + i], xbc[xr + b_col + j], acc);
            }
            st[sb + e] = fma(st[sb + e], decay, acc);
        }
        memoryBarrierBuffer();
        barrier();  // the new state is visible to the next chunk, and the shared arrays are free
    }
}
