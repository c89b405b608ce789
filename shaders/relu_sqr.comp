#version 450
// Squared ReLU (Nemotron-H's and Primer's FFN activation, ggml_relu then ggml_sqr):
//   y = max(x, 0)^2
// over `rows` rows of `cols` values, rows x_stride (y_stride) floats apart. Invocations cover
// the columns (x: a grid-stride loop) and workgroup rows the rows (y, a grid-stride loop too),
// so no index is divided (CPU drivers such as lavapipe have no vector integer division). y may
// be x itself (same window, same stride): each value is read and written by one invocation.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint cols;
    uint x_shift;   // element offsets inside the bound windows
    uint x_stride;  // floats between rows
    uint y_shift;
    uint y_stride;
} pc;

void main() {
    const uint col_step = gl_NumWorkGroups.x * WG;
    for (uint r = gl_WorkGroupID.y; r < pc.rows; r += gl_NumWorkGroups.y) {
        for (uint c = gl_GlobalInvocationID.x; c < pc.cols; c += col_step) {
            // ggml_relu: x > 0 ? x : 0 (so -0 and NaN give 0, as on the CPU)
            const float v = x[pc.x_shift + r * pc.x_stride + c];
            const float p = v > 0.0 ? v : 0.0;
            y[pc.y_shift + r * pc.y_stride + c] = p * p;
        }
    }
}
