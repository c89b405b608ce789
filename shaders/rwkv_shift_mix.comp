#version 450
// RWKV's token shift with its lerp mixes (ref_rwkv.h's rwkv_shift_mix): one invocation per
// channel c walks the tokens, so the shift state (the previous call's last token) is read before
// it is overwritten with this call's last token without a race:
//   out[m][t][c] = x[t][c] + (prev[c] - x[t][c]) * mix[m][c],  prev = shift, then x[t - 1]
// out is packed [n_mix][n_tokens][C].
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Shift { float shift[]; };
layout(std430, binding = 2) readonly buffer Mix { float mix_[]; };
layout(std430, binding = 3) writeonly buffer Out { float o[]; };

layout(push_constant) uniform Push {
    uint n_tokens;
    uint C;
    uint n_mix;
    uint x_shift;   // element offsets inside the bound windows
    uint x_stride;  // floats between token rows
    uint shift_shift;
    uint mix_shift;
    uint out_shift;
} pc;

void main() {
    const uint c = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WG + gl_LocalInvocationID.x;
    if (c >= pc.C) return;
    float prev = shift[pc.shift_shift + c];
    for (uint t = 0; t < pc.n_tokens; ++t) {
        const float cur = x[pc.x_shift + t * pc.x_stride + c];
        const float d = prev - cur;
        for (uint m = 0; m < pc.n_mix; ++m)
            o[pc.out_shift + (m * pc.n_tokens + t) * pc.C + c] = d * mix_[pc.mix_shift + m * pc.C + c] + cur;
        prev = cur;
    }
    if (pc.n_tokens > 0) shift[pc.shift_shift + c] = prev;
}
