#version 450
// RWKV's small elementwise steps over [rows, cols] rows at any stride, chosen by `mode`:
//   0: y = tanh(x)                                the decay lora's inner activation
//   1: y = sigmoid(x)                             the gate lora's inner activation
//   2: y = y + (x - y) sigmoid(p + z)             RWKV-7's value residual: y the value, x the
//                                                 first layer's value, z the v2 lora's output,
//                                                 p the v0 row (one value per column)
// Invocations cover the columns (x: a grid-stride loop) and workgroup rows the rows (y, a
// grid-stride loop too). y may be x itself in modes 0 and 1.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Y { float y[]; };
layout(std430, binding = 2) readonly buffer Z { float z[]; };
layout(std430, binding = 3) readonly buffer P { float p[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint cols;
    uint mode;
    uint x_shift;  // element offsets inside the bound windows
    uint x_stride; // floats between rows
    uint y_shift;
    uint y_stride;
    uint z_shift;
    uint z_stride;
    uint p_shift;
} pc;

float sigmoid(float v) { return 1.0 / (1.0 + exp(-v)); }

void main() {
    const uint col_step = gl_NumWorkGroups.x * WG;
    for (uint r = gl_WorkGroupID.y; r < pc.rows; r += gl_NumWorkGroups.y) {
        for (uint c = gl_GlobalInvocationID.x; c < pc.cols; c += col_step) {
            const float xv = x[pc.x_shift + r * pc.x_stride + c];
            const uint yi = pc.y_shift + r * pc.y_stride + c;
            if (pc.mode == 0u) {
                y[yi] = tanh(clamp(xv, -15.0, 15.0));  // tanh(15) is 1 in float; the clamp keeps exp finite
            } else if (pc.mode == 1u) {
                y[yi] = sigmoid(xv);
            } else {
                const float yv = y[yi];
                y[yi] = yv + (xv - yv) * sigmoid(z[pc.z_shift + r * pc.z_stride + c] + p[pc.p_shift + c]);
            }
        }
    }
}
