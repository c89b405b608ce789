#version 450
// Quantizes activations once, as llama.cpp's CPU backend quantizes them for a quantised weight's
// dot product (ggml's vec_dot_type), into the layout the decode matvecs read (ops::QuantizedActs):
//   quants  int8, four to a word (element e in byte e % 4 of word e / 4), from word q_base
//   scales  one f32 per block of BLOCK, from word scale_base
//   sums    the int32 sum of the quants of each group of 32 (BLOCK 32) or 16 (BLOCK 256, ggml's
//           block_q8_K bsums), from word sum_base
// The values are round_act.comp's, bit for bit: the rounded activation is scale * quant.
//   BLOCK 32  (Q8_0/Q8_1): d = fp16(max|x| / 127), q = roundEven(x * 127/max|x|)
//   BLOCK 256 (Q8_K): m = the x of largest |x| (first on ties), s = -127 / m,
//             q = min(127, roundEven(s * x)), d = 1 / s
// One invocation quantizes a block of 32; a workgroup a block of 256 (a thread per quad).
// NORM_IN (one row): x is the raw residual stream and what is quantized is rms_norm(x) * norm_w,
// computed as shaders/norm.comp computes it at the same workgroup size (x_i * inv) * w_i with
// inv = 1 / sqrt(mean(x^2) + eps) and the same sum order), so decode's pre-norm needs no
// dispatch of its own: every workgroup sums x^2 over the row itself.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64u;      // a power of two
layout(constant_id = 1) const uint NORM_IN = 0u;  // 1: quantize rms_norm(x) * norm_w (one row)
#include "fp16.glsl"
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Q { uint xq[]; };  // quants, scales and sums
layout(std430, binding = 2) readonly buffer NormW { float norm_w[]; };  // NORM_IN: [n] from norm_base
layout(push_constant) uniform Push {
    uint n_blocks;    // blocks in all rows
    uint x_shift;     // element offset of x[0] inside its binding window
    uint q_base;      // word index of the first quant word in the xq binding
    uint scale_base;  // word index of the first scale
    uint sum_base;    // word index of the first sum
    uint grid_x;      // workgroups along x of the 2-D grid
    uint n;           // NORM_IN: the row's length
    uint norm_base;   // NORM_IN: index of norm_w[0] in its binding
    float norm_eps;   // NORM_IN: the norm's epsilon
} pc;

float inv_rms = 1.0;  // NORM_IN: 1 / rms(x), set by main before any x_at

// NORM_IN: 1 / sqrt(mean(x^2) + eps) over the row, in norm.comp's order. Uniform control flow.
float rms_inverse() {
    float s2 = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < pc.n; i += WG) {
        const float v = x[pc.x_shift + i];
        s2 += v * v;
    }
    return div_rn(1.0, sqrt_rn(div_rn(wg_sum(s2), float(pc.n)) + pc.norm_eps));
}

// Element e (counted from x[0]) as it is quantized.
float x_at(uint e) {
    const float v = x[pc.x_shift + e];
    return NORM_IN == 0u ? v : (v * inv_rms) * norm_w[pc.norm_base + e];
}

uint pack_s8(ivec4 q) { return uint(q.x & 0xFF) | uint(q.y & 0xFF) << 8 | uint(q.z & 0xFF) << 16 | uint(q.w) << 24; }

#if BLOCK == 256
shared float s_amax[WG];
shared uint s_first[WG];
shared int s_qsum[64];  // per quad of the block

void main() {
    if (NORM_IN != 0u) inv_rms = rms_inverse();
    const uint block = gl_WorkGroupID.y * pc.grid_x + gl_WorkGroupID.x;
    if (block >= pc.n_blocks) return;  // uniform: a padding workgroup of the 2-D grid
    const uint tid = gl_LocalInvocationID.x;
    const uint e0 = block * 256u;
    // The element of largest |x|, the first on ties: each thread's own (its elements ascend),
    // then the workgroup's, keeping the lower index of equal magnitudes (round_act.comp's rule).
    float amax = 0.0;
    uint first = 0xffffffffu;
    for (uint q = tid; q < 64u; q += WG)
        for (uint j = 0u; j < 4u; ++j) {
            const float a = abs(x_at(e0 + 4u * q + j));
            if (a > amax) { amax = a; first = 4u * q + j; }
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
    const float iscale = amax == 0.0 ? 0.0 : div_rn(-127.0, x_at(e0 + s_first[0]));
    for (uint q = tid; q < 64u; q += WG) {
        ivec4 v = ivec4(0);
        if (amax != 0.0) {
            const vec4 xv = vec4(x_at(e0 + 4u * q), x_at(e0 + 4u * q + 1u), x_at(e0 + 4u * q + 2u), x_at(e0 + 4u * q + 3u));
            v = ivec4(min(vec4(127.0), roundEven(iscale * xv)));
        }
        xq[pc.q_base + block * 64u + q] = pack_s8(v);
        s_qsum[q] = v.x + v.y + v.z + v.w;
    }
    barrier();
    if (tid < 16u) {
        const uint q = 4u * tid;
        xq[pc.sum_base + block * 16u + tid] = uint(s_qsum[q] + s_qsum[q + 1u] + s_qsum[q + 2u] + s_qsum[q + 3u]);
    }
    if (tid == 0u) xq[pc.scale_base + block] = floatBitsToUint(amax == 0.0 ? 0.0 : div_rn(1.0, iscale));
}
#else  // BLOCK == 32
void main() {
    if (NORM_IN != 0u) inv_rms = rms_inverse();
    const uint block = gl_GlobalInvocationID.y * pc.grid_x * WG + gl_GlobalInvocationID.x;
    if (block >= pc.n_blocks) return;
    const uint e0 = block * 32u;
    vec4 xv[8];
    float amax = 0.0;
    for (uint i = 0u; i < 8u; ++i) {
        xv[i] = vec4(x_at(e0 + 4u * i), x_at(e0 + 4u * i + 1u), x_at(e0 + 4u * i + 2u), x_at(e0 + 4u * i + 3u));
        amax = max(amax, max(max(abs(xv[i].x), abs(xv[i].y)), max(abs(xv[i].z), abs(xv[i].w))));
    }
    const float d = round_to_fp16(div_rn(amax, 127.0));
    const float id = amax != 0.0 ? div_rn(127.0, amax) : 0.0;
    int sum = 0;
    for (uint i = 0u; i < 8u; ++i) {
        const ivec4 q = ivec4(roundEven(xv[i] * id));
        xq[pc.q_base + block * 8u + i] = pack_s8(q);
        sum += q.x + q.y + q.z + q.w;
    }
    xq[pc.scale_base + block] = floatBitsToUint(d);
    xq[pc.sum_base + block] = uint(sum);
}
#endif
