#version 450
// Super-weight correction (vkllm quantize --keep-super-weights): a sparse addition to a block's
// output after its down projection. For each token t and each correction e = (row, col, delta):
//   y[t, row] += delta * a[t, col]
// where a [n_tokens, n_in] is the projection's input and y [n_tokens, n_out] its output (or the
// residual stream it was added to). delta = exact weight - the weight as quantised, so the sum
// is the product with the exact super weights. One thread per token applies the corrections in
// order (two may share a row), so the result does not depend on scheduling.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;

layout(std430, binding = 0) buffer Y { float y[]; };
layout(std430, binding = 1) readonly buffer A { float a[]; };
layout(std430, binding = 2) readonly buffer C { uvec4 corrections[]; };  // (row, col, delta bits, unused)

layout(push_constant) uniform Push {
    uint n_tokens;
    uint n_out;      // floats per row of y
    uint n_in;       // floats per row of a
    uint y_shift;    // element offset of y's row 0 inside the bound window
    uint a_shift;    // element offset of a's row 0 inside the bound window
    uint n_corrections;
} pc;

void main() {
    const uint t = gl_GlobalInvocationID.x;
    if (t >= pc.n_tokens) return;
    for (uint e = 0u; e < pc.n_corrections; ++e) {
        const uvec4 c = corrections[e];
        const uint i = pc.y_shift + t * pc.n_out + c.x;
        y[i] = fma(uintBitsToFloat(c.z), a[pc.a_shift + t * pc.n_in + c.y], y[i]);
    }
}
