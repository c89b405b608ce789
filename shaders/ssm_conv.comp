#version 450
// Causal depthwise convolution over a sequence's tokens with a carried state (Mamba's short
// conv1d), one invocation per channel walking the tokens in order:
//   y[t][c] = act(sum_{k < K} w[c][k] * in(t + k - (K - 1), c) + bias[c])
// in(i, c) = x[i][c] for i >= 0, else the state's st[c][K - 1 + i]. Afterwards the state holds
// the channel's last K - 1 inputs. act: SiLU (flags bit 1) or none. The sum is a float sum in
// tap order, as ggml_ssm_conv's. K <= MAX_K.
// LFM2's gated short convolution: with flags bit 2 the input is x * bg (the state then holds
// those products, as llama.cpp's), with bit 3 the output is multiplied by cg:
//   y = cg * conv(bg * x)       (bg, cg: token-major like x, e.g. the b and c of in_proj's row)
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
#define MAX_K 16

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer State { float st[]; };
layout(std430, binding = 2) readonly buffer Wt { float w[]; };
layout(std430, binding = 3) readonly buffer Bias { float bias[]; };
layout(std430, binding = 4) writeonly buffer Y { float y[]; };
layout(std430, binding = 5) readonly buffer InGate { float bg[]; };
layout(std430, binding = 6) readonly buffer OutGate { float cg[]; };

layout(push_constant) uniform Push {
    uint n_tokens;
    uint channels;
    uint d_conv;     // K
    uint x_shift;    // element offsets inside the bound windows
    uint x_stride;   // floats between token rows of x
    uint st_shift;
    uint w_shift;
    uint b_shift;
    uint y_shift;
    uint y_stride;
    uint bg_shift;
    uint bg_stride;
    uint cg_shift;
    uint cg_stride;
    uint flags;      // bit 0: bias, bit 1: SiLU, bit 2: input gate bg, bit 3: output gate cg
} pc;

void main() {
    const uint c = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WG + gl_LocalInvocationID.x;
    if (c >= pc.channels) return;
    const uint K = pc.d_conv, ns = K - 1u;
    float win[MAX_K];
    float wk[MAX_K];
    [[unroll]] for (uint k = 0; k < MAX_K; ++k) {
        win[k] = k < ns ? st[pc.st_shift + c * ns + k] : 0.0;
        wk[k] = k < K ? w[pc.w_shift + c * K + k] : 0.0;
    }
    const bool has_b = (pc.flags & 1u) != 0u, act = (pc.flags & 2u) != 0u;
    const bool in_gate = (pc.flags & 4u) != 0u, out_gate = (pc.flags & 8u) != 0u;
    const float bc = has_b ? bias[pc.b_shift + c] : 0.0;
    for (uint t = 0; t < pc.n_tokens; ++t) {
        float xv = x[pc.x_shift + t * pc.x_stride + c];
        if (in_gate) xv *= bg[pc.bg_shift + t * pc.bg_stride + c];
        // win[0 .. ns) are the previous inputs, oldest first; the new one is tap ns.
        float sum = 0.0;
        [[unroll]] for (uint k = 0; k < MAX_K; ++k) {
            if (k < ns) sum += win[k] * wk[k];
            else if (k == ns) sum += xv * wk[k];
        }
        if (has_b) sum += bc;
        if (act) sum = sum / (1.0 + exp(-sum));
        if (out_gate) sum *= cg[pc.cg_shift + t * pc.cg_stride + c];
        y[pc.y_shift + t * pc.y_stride + c] = sum;
        [[unroll]] for (uint k = 0; k + 1 < MAX_K; ++k) {
            if (k + 1 < ns) win[k] = win[k + 1];
            else if (k + 1 == ns) win[k] = xv;
        }
    }
    [[unroll]] for (uint k = 0; k < MAX_K; ++k)
        if (k < ns) st[pc.st_shift + c * ns + k] = win[k];
}
