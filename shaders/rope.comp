#version 450
#ifdef OUT_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
// Rotary position embedding in place (RoFormer, Su et al. 2021) with linear and YaRN frequency
// scaling (Peng et al. 2023), following ggml's rope_yarn. One invocation per rotated pair:
//   theta_extrap = pos * base^(-2j / n_dims) / freq_factor[j],  theta_interp = freq_scale * theta_extrap
//   YaRN: mix = ext_factor * ramp(j), theta = theta_interp (1 - mix) + theta_extrap mix
//   (x0, x1) -> mscale * (x0 cos - x1 sin, x0 sin + x1 cos)
// Pairs are (j, j + n_dims/2) for NeoX, (2j, 2j + 1) otherwise; dims past n_dims are untouched.
// With slots > 0 the result goes to y instead (a KV cache): token t's heads to row
// pos[t] % slots of rows of n_heads * head_dim, dims past n_dims copied as they are. The
// cache write then needs no copy of its own, and its row comes from the positions buffer.
// With flags bit 3 (and no slots) only the rotated dims go to y, head h of token t from element
// t * y_token_stride + h * y_head_stride: MLA's q_rope straight into the attention queries'
// [q_abs | q_rope] rows, x left as it was.
#include "common.glsl"
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Pos { int pos[]; };
layout(std430, binding = 2) readonly buffer FreqFactors { float freq_factors[]; };
#ifdef OUT_F16  // y is an fp16 cache (16-bit storage): values rounded to nearest even, NaN kept
#include "fp16.glsl"
#define OUT_T(v) float16_t(isnan(v) ? (v) : round_to_fp16(v))
#else
#define OUT_T(v) (v)
#endif
#ifdef OUT_F16
layout(std430, binding = 3) writeonly buffer Y { float16_t y[]; };
#else
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
#endif

layout(push_constant) uniform Push {
    uint n_pairs_total;  // n_tokens * n_heads * n_pairs
    uint n_heads;
    uint head_dim;
    uint n_pairs;        // n_dims / 2
    uint token_stride;   // floats between tokens
    uint x_shift;        // element offsets inside the bound windows
    uint pos_shift;
    uint ff_shift;
    uint flags;          // bit 0: NeoX pairing, bit 1: freq_factors, bit 2: YaRN
    float log2_base;     // log2(freq_base)
    float freq_scale;
    float ext_factor;
    float mscale;        // attn_factor, times YaRN's 1 + 0.1 ln(1 / freq_scale) when YaRN is on
    float corr_low;      // YaRN correction dims (pair indices)
    float corr_high;
    uint y_shift;
    uint slots;          // 0: in place on x (or, flags bit 3, the rotated dims into y)
    uint y_token_stride; // flags bit 3: floats between tokens in y
    uint y_head_stride;  // flags bit 3: floats between heads in y
} pc;

const uint kRotatedIntoY = 8u;  // flags bit 3

// Where element d of token `token`'s head h goes in y: its cache row, or (no slots) its place in
// the rows of y.
uint out_index(uint token, uint h, uint d) {
    if (pc.slots == 0u) return pc.y_shift + token * pc.y_token_stride + h * pc.y_head_stride + d;
    const uint slot = uint(pos[pc.pos_shift + token]) % pc.slots;
    return pc.y_shift + (slot * pc.n_heads + h) * pc.head_dim + d;
}

#include "rope_angle.glsl"

void main() {
    const uint threads = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    const bool neox = (pc.flags & 1u) != 0u;
    const bool in_place = pc.slots == 0u && (pc.flags & kRotatedIntoY) == 0u;
    for (uint e = gl_GlobalInvocationID.x; e < pc.n_pairs_total; e += threads) {
        const uint j = e % pc.n_pairs;
        const uint head = e / pc.n_pairs;  // token * n_heads + h
        const uint token = head / pc.n_heads, h = head - token * pc.n_heads;

        const vec2 cs = rope_cos_sin(pos[pc.pos_shift + token], j);
        const float c = cs.x, s = cs.y;

        const uint i0 = neox ? j : 2u * j;
        const uint i1 = i0 + (neox ? pc.n_pairs : 1u);
        const uint base = pc.x_shift + token * pc.token_stride + h * pc.head_dim;
        const float x0 = x[base + i0], x1 = x[base + i1];
        const float r0 = x0 * c - x1 * s, r1 = x0 * s + x1 * c;
        if (in_place) {
            x[base + i0] = r0;
            x[base + i1] = r1;
        } else {
            y[out_index(token, h, i0)] = OUT_T(r0);
            y[out_index(token, h, i1)] = OUT_T(r1);
        }
    }
    if (pc.slots == 0u) return;
    // Into a cache: the dims past n_dims are copied unrotated.
    const uint rest = pc.head_dim - 2u * pc.n_pairs;
    const uint n_rest = (pc.n_pairs_total / pc.n_pairs) * rest;  // n_tokens * n_heads * rest
    for (uint e = gl_GlobalInvocationID.x; e < n_rest; e += threads) {
        const uint d = 2u * pc.n_pairs + e % rest;
        const uint head = e / rest;
        const uint token = head / pc.n_heads, h = head - token * pc.n_heads;
        y[out_index(token, h, d)] = OUT_T(x[pc.x_shift + token * pc.token_stride + h * pc.head_dim + d]);
    }
}
