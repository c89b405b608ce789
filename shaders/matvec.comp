#version 450
// y = W x for one token (decode): the memory-bound matrix-vector product. A workgroup computes
// ROWS consecutive rows; its threads stride over the rows' 8-element units so that consecutive
// threads read consecutive words of a row (coalesced), each unit of x is loaded once for all
// ROWS rows, and the partial sums are reduced in shared memory (USE_SUBGROUP: subgroupAdd first).
#include "common.glsl"
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128u;  // threads per workgroup (a power of two)
layout(constant_id = 1) const uint ROWS = 2u;  // rows per workgroup

#include "dequant.glsl"  // binding 0: the weight words (this dispatch's row window)
layout(std430, binding = 1) readonly buffer X { float x[]; };  // [n_in] from x_base
layout(std430, binding = 2) buffer Y { float y[]; };           // [n_rows] from y_base

layout(push_constant) uniform Push {
    uint n_in;        // row length (elements)
    uint n_rows;      // rows in this dispatch
    uint w_base;      // byte address of row 0 in the weight binding
    uint row_bytes;   // bytes per row
    uint x_base;      // index of x[0] in the x binding
    uint y_base;      // index of y[0] in the y binding
    uint accumulate;  // 1: y += W x (fused residual add)
} pc;

shared float partial[ROWS * WG];  // [ROWS][WG]

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint row0 = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * ROWS;
    if (row0 >= pc.n_rows) return;  // a padding workgroup of the 2-D grid (uniform)

    // Rows past the end repeat the last row (branch-free); their sums are not written.
    uint row_addr[ROWS];
    float acc[ROWS];
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        row_addr[r] = pc.w_base + min(row0 + r, pc.n_rows - 1u) * pc.row_bytes;
        acc[r] = 0.0;
    }

    const uint n_units = (pc.n_in / BLOCK_ELEMS) * UNITS_PER_BLOCK;  // float types: whole groups of 8
    for (uint unit = tid; unit < n_units; unit += WG) {
        const uint ib = unit / UNITS_PER_BLOCK, u = unit % UNITS_PER_BLOCK;
        const uint e_lo = pc.x_base + ib * BLOCK_ELEMS + unit_lo_elem(u);
        const uint e_hi = pc.x_base + ib * BLOCK_ELEMS + unit_hi_elem(u);
        const vec4 x_lo = vec4(x[e_lo], x[e_lo + 1u], x[e_lo + 2u], x[e_lo + 3u]);
        const vec4 x_hi = vec4(x[e_hi], x[e_hi + 1u], x[e_hi + 2u], x[e_hi + 3u]);
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
            vec4 w_lo, w_hi;
            dequant_unit(row_addr[r] + ib * BLOCK_BYTES, u, w_lo, w_hi);
            acc[r] += dot(w_lo, x_lo) + dot(w_hi, x_hi);
        }
    }
#ifdef W_FLOAT
    // Float rows may end in a partial group of 8.
    for (uint e = (pc.n_in & ~7u) + tid; e < pc.n_in; e += WG) {
        const float xe = x[pc.x_base + e];
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) acc[r] += w_elem(row_addr[r], e) * xe;
    }
#endif

#ifdef USE_SUBGROUP
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) acc[r] = subgroupAdd(acc[r]);
    if (subgroupElect()) {
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) partial[r * WG + gl_SubgroupID] = acc[r];
    }
    barrier();
    if (tid < ROWS && row0 + tid < pc.n_rows) {
        float sum = 0.0;
        for (uint i = 0u; i < gl_NumSubgroups; ++i) sum += partial[tid * WG + i];
        const uint yi = pc.y_base + row0 + tid;
        y[yi] = pc.accumulate != 0u ? y[yi] + sum : sum;
    }
#else
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) partial[r * WG + tid] = acc[r];
    barrier();
    for (uint stride = WG / 2u; stride > 0u; stride >>= 1) {
        if (tid < stride) {
            [[unroll]] for (uint r = 0u; r < ROWS; ++r) partial[r * WG + tid] += partial[r * WG + tid + stride];
        }
        barrier();
    }
    if (tid < ROWS && row0 + tid < pc.n_rows) {
        const uint yi = pc.y_base + row0 + tid;
        y[yi] = pc.accumulate != 0u ? y[yi] + partial[tid * WG] : partial[tid * WG];
    }
#endif
}
