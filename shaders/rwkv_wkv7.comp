#version 450
// RWKV-7's generalized delta rule (ggml_rwkv_wkv7), sequential over the tokens of one sequence.
// One workgroup per head, one invocation per state row i (value channel i), the row
// S[i][0..N) kept in registers across the tokens (N, the head size, is a specialization
// constant and the workgroup size). Per token the head's r, w, k, a and b are staged in shared
// memory, then every row updates independently:
//   sa      = sum_j a[j] S[i][j]
//   S[i][j] = S[i][j] w[j] + v[i] k[j] + sa b[j]
//   out[i]  = sum_j S[i][j] r[j]
// The state [n_head][N][N] (row i contiguous, ggml's layout) is read at the start and written
// back at the end.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint N = 64;

layout(std430, binding = 0) buffer State { float st[]; };
layout(std430, binding = 1) readonly buffer R { float r[]; };
layout(std430, binding = 2) readonly buffer W { float w[]; };
layout(std430, binding = 3) readonly buffer K { float k[]; };
layout(std430, binding = 4) readonly buffer V { float v[]; };
layout(std430, binding = 5) readonly buffer A { float a[]; };
layout(std430, binding = 6) readonly buffer B { float b[]; };
layout(std430, binding = 7) writeonly buffer O { float o[]; };

layout(push_constant) uniform Push {
    uint n_tokens;
    uint st_shift;  // element offsets inside the bound windows
    uint r_shift;
    uint r_stride;  // floats between token rows
    uint w_shift;
    uint w_stride;
    uint k_shift;
    uint k_stride;
    uint v_shift;
    uint v_stride;
    uint a_shift;
    uint a_stride;
    uint b_shift;
    uint b_stride;
    uint o_shift;
    uint o_stride;
} pc;

shared float sr[N], sw[N], sk[N], sa_[N], sb[N];

void main() {
    const uint h = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    const uint i = gl_LocalInvocationID.x;
    const uint c = h * N + i;  // this invocation's channel: its state row, and the one it stages

    float s[N];
    const uint sbase = pc.st_shift + c * N;
    for (uint j = 0; j < N; ++j) s[j] = st[sbase + j];

    for (uint t = 0; t < pc.n_tokens; ++t) {
        sr[i] = r[pc.r_shift + t * pc.r_stride + c];
        sw[i] = w[pc.w_shift + t * pc.w_stride + c];
        sk[i] = k[pc.k_shift + t * pc.k_stride + c];
        sa_[i] = a[pc.a_shift + t * pc.a_stride + c];
        sb[i] = b[pc.b_shift + t * pc.b_stride + c];
        const float vi = v[pc.v_shift + t * pc.v_stride + c];
        barrier();
        float sa = 0.0;
        for (uint j = 0; j < N; ++j) sa += sa_[j] * s[j];
        float y = 0.0;
        for (uint j = 0; j < N; ++j) {
            s[j] = s[j] * sw[j] + vi * sk[j] + sa * sb[j];
            y += s[j] * sr[j];
        }
        o[pc.o_shift + t * pc.o_stride + c] = y;
        barrier();  // the next token's staging overwrites what this one read
    }
    for (uint j = 0; j < N; ++j) st[sbase + j] = s[j];
}
