#version 450
#ifdef OUT_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
// KV-cache write: row t of src (n floats) goes to row positions[t] % slots of dst. The slot
// comes from the positions buffer, not from the recording, so one recorded step serves every
// position (a replayed decode step), and a ring cache's wrap needs no second copy.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128u;

layout(std430, binding = 0) readonly buffer Src { float src[]; };
layout(std430, binding = 1) readonly buffer Pos { int pos[]; };
#ifdef OUT_F16  // an fp16 cache (16-bit storage): each value rounded on the way in
#define OUT_T float16_t
#else
#define OUT_T float
#endif
layout(std430, binding = 2) writeonly buffer Dst { OUT_T dst[]; };

layout(push_constant) uniform Push {
    uint n;          // floats per row
    uint n_rows;     // rows (tokens)
    uint slots;      // rows of dst
    uint src_shift;  // element offset of row 0 inside the src window
    uint pos_shift;  // element offset of positions[0] inside its window
} pc;

void main() {
    const uint t = gl_WorkGroupID.y;
    if (t >= pc.n_rows) return;
    const uint slot = uint(pos[pc.pos_shift + t]) % pc.slots;
    for (uint e = gl_GlobalInvocationID.x; e < pc.n; e += gl_NumWorkGroups.x * WG)
        dst[slot * pc.n + e] = OUT_T(src[pc.src_shift + t * pc.n + e]);
}
