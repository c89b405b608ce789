#version 450
// Copies rows of floats (the logits or embeddings a forward pass reads back) and flags their
// non-finite values on the way, so a NaN or an infinity is found without a second pass over the
// data: per row, the number of NaN or infinite values and the lowest index of one. A value is
// non-finite when its exponent bits are all ones (tested on the bits: a compiler may assume
// floats are finite and fold isnan away).
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256u;

layout(std430, binding = 0) readonly buffer Src { float src[]; };
layout(std430, binding = 1) writeonly buffer Dst { float dst[]; };
// [n_rows][2]: count, first index. The caller sets them to 0 and 0xffffffff before the dispatch.
layout(std430, binding = 2) buffer Flags { uint flags[]; };

layout(push_constant) uniform Push {
    uint n;          // floats per row
    uint src_shift;  // element offset of row 0 inside the src window
    uint dst_shift;  // element offset of row 0 inside the dst window
} pc;

void main() {
    const uint row = gl_WorkGroupID.y;
    const uint stride = gl_NumWorkGroups.x * WG;
    uint bad = 0u, first = 0xffffffffu;
    for (uint e = gl_GlobalInvocationID.x; e < pc.n; e += stride) {
        const float v = src[pc.src_shift + row * pc.n + e];
        dst[pc.dst_shift + row * pc.n + e] = v;
        if ((floatBitsToUint(v) & 0x7f800000u) == 0x7f800000u) {
            if (bad == 0u) first = e;  // e grows: the thread's first is its lowest
            ++bad;
        }
    }
    if (bad != 0u) {
        atomicAdd(flags[2u * row], bad);
        atomicMin(flags[2u * row + 1u], first);
    }
}
