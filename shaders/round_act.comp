#version 450
// Rounds activations the way llama.cpp's CPU backend does before a dot product with a
// quantised weight (ggml's vec_dot_type), so logits match it:
//   BLOCK 32  (Q8_0/Q8_1, x86 path): d = max|x| / 127 stored as fp16, q = roundEven(x * 127/max|x|),
//             y = fp16(d) * q
//   BLOCK 256 (Q8_K): m = the x of largest |x| (first on ties), s = -127 / m,
//             q = min(127, roundEven(s * x)), y = (1 / s) * q
//   F16 / BF16 (BLOCK 1): y = x rounded to the nearest fp16 / bf16 (ties to even)
// One invocation rounds one block of 1 or 32; a workgroup rounds a block of 256 (its threads
// stride over it, so a decode step's few blocks are not a few threads' serial loops: on an H200
// those took 3.1 of the 4.8 ms of a Llama-1B Q4_K_M step). x and y are [n_rows, n] (n a multiple
// of BLOCK).
#include "common.glsl"
#include "fp16.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64u;  // a power of two
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
    uint n_blocks;   // blocks in all rows
    uint x_shift;    // element offset of the first input inside its binding window
    uint y_shift;
    uint grid_x;     // workgroups along x of the 2-D grid
} pc;

#if BLOCK == 256
shared float s_amax[WG];
shared uint s_first[WG];

void main() {
    const uint block = gl_WorkGroupID.y * pc.grid_x + gl_WorkGroupID.x;
    if (block >= pc.n_blocks) return;  // uniform: a padding workgroup of the 2-D grid
    const uint tid = gl_LocalInvocationID.x;
    const uint xi = pc.x_shift + block * BLOCK;
    const uint yi = pc.y_shift + block * BLOCK;
    // The element of largest |x|, the first on ties: each thread's own (its elements ascend),
    // then the workgroup's, keeping the lower index of equal magnitudes.
    float amax = 0.0;
    uint first = 0xffffffffu;
    for (uint j = tid; j < BLOCK; j += WG) {
        const float a = abs(x[xi + j]);
        if (a > amax) { amax = a; first = j; }
    }
    s_amax[tid] = amax;
    s_first[tid] = first;
    barrier();
    for (uint stride = WG / 2u; stride > 0u; stride >>= 1) {
        if (tid < stride) {
            const float a = s_amax[tid + stride];
            const uint f = s_first[tid + stride];
            if (a > s_amax[tid] || (a == s_amax[tid] && f < s_first[tid])) {
                s_amax[tid] = a;
                s_first[tid] = f;
            }
        }
        barrier();
    }
    amax = s_amax[0];
    if (amax == 0.0) {
        for (uint j = tid; j < BLOCK; j += WG) y[yi + j] = 0.0;
        return;
    }
    const float m = x[xi + s_first[0]];
    const float iscale = div_rn(-127.0, m);
    const float d = div_rn(1.0, iscale);
    for (uint j = tid; j < BLOCK; j += WG) y[yi + j] = d * min(127.0, roundEven(iscale * x[xi + j]));
}
#else
void main() {
    uint block = gl_GlobalInvocationID.y * pc.grid_x * gl_WorkGroupSize.x + gl_GlobalInvocationID.x;
    if (block >= pc.n_blocks) return;
    uint xi = pc.x_shift + block * BLOCK;
    uint yi = pc.y_shift + block * BLOCK;
#if defined(ROUND_F16)
    y[yi] = round_to_fp16(x[xi]);
#elif defined(ROUND_BF16)
    uint b = floatBitsToUint(x[xi]);
    if ((b & 0x7fffffffu) > 0x7f800000u) y[yi] = x[xi];  // NaN stays NaN
    else y[yi] = uintBitsToFloat((b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u);
#else  // BLOCK == 32
    float amax = 0.0;
    for (uint j = 0; j < BLOCK; ++j) amax = max(amax, abs(x[xi + j]));
    float d = round_to_fp16(div_rn(amax, 127.0));
    float id = amax != 0.0 ? div_rn(127.0, amax) : 0.0;
    for (uint j = 0; j < BLOCK; ++j) y[yi + j] = d * roundEven(x[xi + j] * id);
#endif
}
#endif
