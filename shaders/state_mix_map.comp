#version 450
// A Mamba-2 head's implicit token-to-token mixing map (the scan's dual form), rows of the pass's
// tokens against the key rows stored by shaders/state_scan_ssm.comp (every earlier position the
// probe saw, and the pass's own):
//   M[t][s] = (C_t . B_s) exp(L_t - L_s) dt_s   for s <= t, else 0
// where L is the running sum of the head's log decay dt A, so exp(L_t - L_s) is the product of
// the decays of tokens s+1..t. One invocation per (row, key).
#include "common.glsl"
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Cm { float cm[]; };
layout(std430, binding = 1) readonly buffer Keys { float keys[]; };
layout(std430, binding = 2) writeonly buffer Map { float map[]; };

layout(push_constant) uniform Push {
    uint n_rows;      // the pass's tokens that have a key row
    uint n_keys;      // key columns of a map row
    uint d_state;
    uint n_head;
    uint head;
    uint group;
    uint gs;          // n_group * d_state
    uint key_first;   // the key row of the pass's first token
    uint c_shift;     // element offsets inside the bound windows, and C's row stride
    uint c_stride;
    uint key_shift;   // [positions][n_head][2] (dt, L)
    uint key_b_shift; // [positions][gs]
    uint map_shift;   // [n_rows][n_keys]
} pc;

void main() {
    const uint s = gl_GlobalInvocationID.x;
    const uint t = gl_WorkGroupID.y;
    if (s >= pc.n_keys || t >= pc.n_rows) return;
    const uint row = pc.key_first + t;
    float m = 0.0;
    if (s <= row) {
        float cb = 0.0;
        for (uint j = 0; j < pc.d_state; ++j)
            cb += cm[pc.c_shift + t * pc.c_stride + pc.group * pc.d_state + j] *
                  keys[pc.key_b_shift + s * pc.gs + pc.group * pc.d_state + j];
        const float dt_s = keys[pc.key_shift + (s * pc.n_head + pc.head) * 2u];
        const float l_s = keys[pc.key_shift + (s * pc.n_head + pc.head) * 2u + 1u];
        const float l_t = keys[pc.key_shift + (row * pc.n_head + pc.head) * 2u + 1u];
        m = cb * exp(l_t - l_s) * dt_s;
    }
    map[pc.map_shift + t * pc.n_keys + s] = m;
}
