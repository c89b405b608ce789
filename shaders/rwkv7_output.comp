#version 450
// RWKV-7's wkv output before the output projection (ref_rwkv.h's rwkv7_wkv_output), in place
// over o: one workgroup per (token, head), one invocation per channel of the head (N, the head
// size, is a specialization constant and the workgroup size).
//   o = (group_norm(o) ln_w + ln_b + (sum_j k[j] r[j] r_k[j]) v) g
// group_norm: the head's values less their mean over sqrt(variance + eps) (ggml_norm). Every
// invocation sums the head's values from shared memory itself, in one order.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint N = 64;

layout(std430, binding = 0) buffer O { float o[]; };
layout(std430, binding = 1) readonly buffer R { float r[]; };
layout(std430, binding = 2) readonly buffer K { float k[]; };
layout(std430, binding = 3) readonly buffer V { float v[]; };
layout(std430, binding = 4) readonly buffer G { float g[]; };
layout(std430, binding = 5) readonly buffer LnW { float ln_w[]; };
layout(std430, binding = 6) readonly buffer LnB { float ln_b[]; };
layout(std430, binding = 7) readonly buffer RK { float r_k[]; };

layout(push_constant) uniform Push {
    uint n_tokens;
    uint n_head;
    uint o_shift;  // element offsets inside the bound windows
    uint o_stride; // floats between token rows
    uint r_shift;
    uint r_stride;
    uint k_shift;
    uint k_stride;
    uint v_shift;
    uint v_stride;
    uint g_shift;
    uint g_stride;
    uint lnw_shift;
    uint lnb_shift;
    uint rk_shift;
    float eps;
} pc;

shared float so[N], sbonus[N];

void main() {
    const uint idx = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (idx >= pc.n_tokens * pc.n_head) return;  // whole workgroups: no barrier is skipped by part of one
    const uint t = idx / pc.n_head, h = idx - t * pc.n_head;
    const uint i = gl_LocalInvocationID.x, c = h * N + i;
    const uint oc = pc.o_shift + t * pc.o_stride + c;
    const float ov = o[oc];
    so[i] = ov;
    sbonus[i] = k[pc.k_shift + t * pc.k_stride + c] * r[pc.r_shift + t * pc.r_stride + c] * r_k[pc.rk_shift + c];
    barrier();
    float sum = 0.0, bonus = 0.0;
    for (uint j = 0; j < N; ++j) {
        sum += so[j];
        bonus += sbonus[j];
    }
    const float mean = sum / float(N);
    float sum2 = 0.0;
    for (uint j = 0; j < N; ++j) sum2 += (so[j] - mean) * (so[j] - mean);
    const float scale = 1.0 / sqrt(sum2 / float(N) + pc.eps);
    const float y = ((ov - mean) * scale) * ln_w[pc.lnw_shift + c] + ln_b[pc.lnb_shift + c] +
                    v[pc.v_shift + t * pc.v_stride + c] * bonus;
    o[oc] = y * g[pc.g_shift + t * pc.g_stride + c];
}
