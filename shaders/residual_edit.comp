#version 450
// Residual-stream edits (interventions): sets one channel of every token's row of x
// [n_tokens, n], for each of n_edits edits in order (two edits may touch the same channel).
//   mode 0 Zero:  x[t, c] = 0            mode 1 Value: x[t, c] = value
//   mode 2 Scale: x[t, c] *= value       mode 3 Mean:  x[t, c] = running mean of the channel
// Mean keeps (sum, count) per edit in `state` across calls: this call's unedited values join
// the sum first, so every token of a call gets the mean over all tokens seen so far.
// One workgroup does all edits (they are few); its threads stride over the tokens.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;

layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Edits { uvec4 edits[]; };  // (channel, mode, value bits, unused)
layout(std430, binding = 2) buffer State { float state[]; };          // [n_edits] of (sum, count)

layout(push_constant) uniform Push {
    uint n_tokens;
    uint n;         // floats per token row
    uint x_shift;   // element offset of row 0 inside the bound window
    uint first;     // first edit (index into edits and state) of this call
    uint n_edits;
} pc;

shared float sum_sh[WG];
shared float mean_sh;

void main() {
    const uint t0 = gl_LocalInvocationID.x;
    for (uint e = pc.first; e < pc.first + pc.n_edits; ++e) {
        const uvec4 ed = edits[e];
        const uint c = ed.x, mode = ed.y;
        const float value = uintBitsToFloat(ed.z);
        if (mode == 3u) {
            float s = 0.0;
            for (uint t = t0; t < pc.n_tokens; t += WG) s += x[pc.x_shift + t * pc.n + c];
            sum_sh[t0] = s;
            barrier();
            for (uint half_ = WG / 2u; half_ > 0u; half_ /= 2u) {
                if (t0 < half_) sum_sh[t0] += sum_sh[t0 + half_];
                barrier();
            }
            if (t0 == 0u) {
                state[2u * e] += sum_sh[0];
                state[2u * e + 1u] += float(pc.n_tokens);
                mean_sh = state[2u * e] / state[2u * e + 1u];
            }
            barrier();
        }
        for (uint t = t0; t < pc.n_tokens; t += WG) {
            const uint i = pc.x_shift + t * pc.n + c;
            if (mode == 0u) x[i] = 0.0;
            else if (mode == 1u) x[i] = value;
            else if (mode == 2u) x[i] *= value;
            else x[i] = mean_sh;
        }
        // The next edit may read this channel.
        memoryBarrierBuffer();
        barrier();
    }
}
