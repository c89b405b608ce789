#version 450
// RWKV-7's wkv operands from the time mix's projections (ref_rwkv.h's rwkv7_wkv_inputs), in
// place: one workgroup per (token, head), one invocation per channel of the head (N, the head
// size, is a specialization constant and the workgroup size).
//   w  = exp(-0.606531 sigmoid(w0 + w))         the decay, over the w2 lora's output
//   ag = sigmoid(a0 + a)                        the in-context learning rate
//   kk = (k k_k) / max(|k k_k|, 1e-12)          L2 norm over the head (ggml_l2_norm)
//   k  = k + (ag (k k_a) - k k_a)
//   a  = -kk, b = kk ag                         wkv7's a and b (a over the a2 lora's output)
// Every invocation sums the head's squares itself from shared memory, in one order, so all of
// them see the same norm.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint N = 64;

layout(std430, binding = 0) buffer W { float w[]; };
layout(std430, binding = 1) buffer K { float k[]; };
layout(std430, binding = 2) buffer A { float a[]; };
layout(std430, binding = 3) writeonly buffer B { float b[]; };
layout(std430, binding = 4) readonly buffer W0 { float w0[]; };
layout(std430, binding = 5) readonly buffer A0 { float a0[]; };
layout(std430, binding = 6) readonly buffer KK { float k_k[]; };
layout(std430, binding = 7) readonly buffer KA { float k_a[]; };

layout(push_constant) uniform Push {
    uint n_tokens;
    uint n_head;
    uint w_shift;  // element offsets inside the bound windows
    uint w_stride; // floats between token rows
    uint k_shift;
    uint k_stride;
    uint a_shift;
    uint a_stride;
    uint b_shift;
    uint b_stride;
    uint w0_shift;
    uint a0_shift;
    uint kk_shift;
    uint ka_shift;
} pc;

shared float skk[N];

float sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }

void main() {
    const uint idx = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (idx >= pc.n_tokens * pc.n_head) return;  // whole workgroups: no barrier is skipped by part of one
    const uint t = idx / pc.n_head, h = idx - t * pc.n_head;
    const uint c = h * N + gl_LocalInvocationID.x;
    const uint kc = pc.k_shift + t * pc.k_stride + c;
    const float kv = k[kc];
    const float kk = kv * k_k[pc.kk_shift + c];
    skk[gl_LocalInvocationID.x] = kk;
    barrier();
    float sum = 0.0;
    for (uint j = 0; j < N; ++j) sum += skk[j] * skk[j];
    const float kn = kk / max(sqrt(sum), 1e-12);

    const uint ac = pc.a_shift + t * pc.a_stride + c;
    const float ag = sigmoid(a0[pc.a0_shift + c] + a[ac]);
    const float ka = kv * k_a[pc.ka_shift + c];
    k[kc] = kv + (ag * ka - ka);
    const uint wc = pc.w_shift + t * pc.w_stride + c;
    w[wc] = exp(-0.606531 * sigmoid(w[wc] + w0[pc.w0_shift + c]));
    a[ac] = -kn;
    b[pc.b_shift + t * pc.b_stride + c] = kn * ag;
}
