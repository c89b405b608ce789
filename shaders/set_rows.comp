#version 450
#ifdef OUT_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
// KV-cache write: row t of src (n floats, rows src_stride apart: a slice of wider rows, such as
// MLA's latent values inside its [c | kr] rows) goes to row positions[t] % slots of dst. The slot
// comes from the positions buffer, not from the recording, so one recorded step serves every
// position (a replayed decode step), and a ring cache's wrap needs no second copy.
//   default   dst is f32
//   OUT_F16   dst is fp16 (16-bit storage), each value rounded to nearest even
//   OUT_Q8_0  dst rows are blocks of 32 values, 9 words each: the scale d as an f32 word (an
//             fp16 value, as ggml's Q8_0 stores it), then 32 int8 quants. One invocation
//             quantises one block as ggml's quantize_row_q8_0 does: d = fp16(max|x| / 127),
//             q = round-half-even(x * 127 / max|x|). n is a multiple of 32.
#include "common.glsl"
#include "fp16.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128u;

layout(std430, binding = 0) readonly buffer Src { float src[]; };
layout(std430, binding = 1) readonly buffer Pos { int pos[]; };
#if defined(OUT_F16)
layout(std430, binding = 2) writeonly buffer Dst { float16_t dst[]; };
#elif defined(OUT_Q8_0)
layout(std430, binding = 2) writeonly buffer Dst { uint dst[]; };
#else
layout(std430, binding = 2) writeonly buffer Dst { float dst[]; };
#endif

layout(push_constant) uniform Push {
    uint n;          // floats per row
    uint n_rows;     // rows (tokens)
    uint slots;      // rows of dst
    uint src_shift;  // element offset of row 0 inside the src window
    uint pos_shift;  // element offset of positions[0] inside its window
    uint src_stride; // floats between src rows (0: n, packed rows)
} pc;

void main() {
    const uint t = gl_WorkGroupID.y;
    if (t >= pc.n_rows) return;
    const uint slot = uint(pos[pc.pos_shift + t]) % pc.slots;
    const uint s0 = pc.src_shift + t * (pc.src_stride != 0u ? pc.src_stride : pc.n);
#if defined(OUT_Q8_0)
    const uint blocks = pc.n / 32u;
    for (uint b = gl_GlobalInvocationID.x; b < blocks; b += gl_NumWorkGroups.x * WG) {
        float amax = 0.0;
        for (uint i = 0u; i < 32u; ++i) amax = max(amax, abs(src[s0 + 32u * b + i]));
        const float id = amax != 0.0 ? div_rn(127.0, amax) : 0.0;
        const uint out0 = (slot * blocks + b) * 9u;
        dst[out0] = floatBitsToUint(round_to_fp16(div_rn(amax, 127.0)));
        for (uint w = 0u; w < 8u; ++w) {
            const vec4 v = roundEven(vec4(src[s0 + 32u * b + 4u * w], src[s0 + 32u * b + 4u * w + 1u],
                                          src[s0 + 32u * b + 4u * w + 2u], src[s0 + 32u * b + 4u * w + 3u]) * id);
            const ivec4 q = clamp(ivec4(v), -127, 127);
            const uvec4 b = uvec4(q & 0xff);
            dst[out0 + 1u + w] = b.x | (b.y << 8) | (b.z << 16) | (b.w << 24);
        }
    }
#else
    for (uint e = gl_GlobalInvocationID.x; e < pc.n; e += gl_NumWorkGroups.x * WG) {
        const float v = src[s0 + e];
#if defined(OUT_F16)
        // Rounded here (the conversion's own rounding mode is the driver's); NaN stays NaN.
        dst[slot * pc.n + e] = float16_t(isnan(v) ? v : round_to_fp16(v));
#else
        dst[slot * pc.n + e] = v;
#endif
    }
#endif
}
