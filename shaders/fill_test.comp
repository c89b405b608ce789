#version 450
// A trivial kernel for runtime tests: out[i] = a[i] * scale + i.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) writeonly buffer Out { float o[]; };
layout(push_constant) uniform Push { uint n; float scale; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n) o[i] = a[i] * pc.scale + float(i);
}
