#version 450
// y = W x for a few tokens at once (2 to COLS rows of x: a decode pass over several sequences,
// as llama.cpp's mul_mat_vec with ncols > 1). A workgroup computes ROWS consecutive weight rows
// for every row of x: each weight quad is decoded once (dequant4) and dotted with the same quad of
// every x row, so the weights are read once for all the tokens, where matvec.comp would read them
// once per token and the tiled matmul.comp computes a 32-token tile for two.
// Threads stride over 32-element units of the rows as matvec.comp's do, and sum each unit before
// adding it (the same order as matvec.comp's generic dot, so float rows give its bits for the same
// workgroup width). Rows of x past n_cols (COLS is a bucket: 2, 4 or 8) repeat the last row and
// are not stored. Partial sums are reduced with subgroupAdd (USE_SUBGROUP) or in shared memory.
#include "common.glsl"
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64u;    // threads per workgroup (a power of two)
layout(constant_id = 1) const uint ROWS = 2u;   // weight rows per workgroup
layout(constant_id = 2) const uint COLS = 8u;   // rows of x read per dispatch, at most (>= n_cols)
layout(constant_id = 3) const uint W_ALIGNED = 0u;  // 1: the weight rows in their 16-byte-aligned layout (dequant.glsl)

#define IQ_GRID_BINDING 3  // the grid i-quants' codebook (dequant_iq_grid.glsl)
#include "dequant.glsl"    // binding 0: the weight words (this dispatch's row window)

layout(std430, binding = 1) readonly buffer X { float x[]; };   // [n_cols][n_in] from x_base
layout(std430, binding = 1) readonly buffer X4 { vec4 x4[]; };  // the same, as vec4
layout(std430, binding = 2) buffer Y { float y[]; };            // [n_cols][y_stride] from y_base

layout(push_constant) uniform Push {
    uint n_in;        // row length (elements)
    uint n_rows;      // weight rows in this dispatch
    uint n_cols;      // rows of x (tokens), 1..COLS
    uint w_base;      // byte address of row 0 in the weight binding
    uint row_bytes;   // bytes per weight row
    uint x_base;      // index of x[0][0] in the x binding
    uint y_base;      // index of y[0][0] in the y binding
    uint y_stride;    // elements from one token's outputs to the next's
    uint accumulate;  // 1: y += W x (fused residual add)
    uint x_vec4;      // 1: x_base and n_in are multiples of 4, so x quads can be read as vec4
} pc;

const uint NACC = ROWS * COLS;  // acc[r * COLS + c]: weight row r against x row c
const uint UNITS_PER_BLOCK = BLOCK_ELEMS / 32u;

shared float partial[NACC * WG];  // [NACC][WG]

uint row_addr[ROWS];
uint x_row[COLS];  // index of x row c's first element
float acc[NACC];

vec4 x_quad(uint i) { return pc.x_vec4 != 0u ? x4[i >> 2] : vec4(x[i], x[i + 1u], x[i + 2u], x[i + 3u]); }

// Adds 32-element unit `unit` of every weight row, dotted with every x row, to acc.
void accumulate_unit(uint unit) {
    const uint ib = unit / UNITS_PER_BLOCK, u = unit % UNITS_PER_BLOCK;
    const uint e0 = ib * BLOCK_ELEMS + 32u * u;
    float s[NACC];
    [[unroll]] for (uint k = 0u; k < NACC; ++k) s[k] = 0.0;
    [[dont_unroll]] for (uint i = 0u; i < 8u; ++i) {  // unrolled, the loop costs compile time, not speed
        vec4 xq[COLS];
        [[unroll]] for (uint c = 0u; c < COLS; ++c) xq[c] = x_quad(x_row[c] + e0 + 4u * i);
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
            const vec4 w = dequant4(block_address(row_addr[r], ib), 8u * u + i);
            [[unroll]] for (uint c = 0u; c < COLS; ++c) s[r * COLS + c] += dot(w, xq[c]);
        }
    }
    [[unroll]] for (uint k = 0u; k < NACC; ++k) acc[k] += s[k];
}

void store(uint r, uint c, float v) {
    const uint yi = pc.y_base + c * pc.y_stride + r;
    y[yi] = pc.accumulate != 0u ? y[yi] + v : v;
}

// Writes the sum of accumulator k (weight row k / COLS, x row k % COLS) when both exist.
void store_acc(uint row0, uint k, float v) {
    const uint r = row0 + k / COLS, c = k % COLS;
    if (r < pc.n_rows && c < pc.n_cols) store(r, c, v);
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint row0 = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * ROWS;
    if (row0 >= pc.n_rows) return;  // a padding workgroup of the 2-D grid (uniform)

    // Rows past the end repeat the last row (branch-free); their sums are not written.
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) row_addr[r] = pc.w_base + min(row0 + r, pc.n_rows - 1u) * pc.row_bytes;
    [[unroll]] for (uint c = 0u; c < COLS; ++c) x_row[c] = pc.x_base + min(c, pc.n_cols - 1u) * pc.n_in;
    [[unroll]] for (uint k = 0u; k < NACC; ++k) acc[k] = 0.0;

    const uint n_units = (pc.n_in / BLOCK_ELEMS) * UNITS_PER_BLOCK;  // float types: whole groups of 32
    for (uint unit = tid; unit < n_units; unit += WG) accumulate_unit(unit);
#ifdef W_FLOAT
    // Float rows may end in a partial group of 32.
    for (uint e = (pc.n_in / BLOCK_ELEMS) * BLOCK_ELEMS + tid; e < pc.n_in; e += WG) {
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
            const float w = w_elem(row_addr[r], e);
            [[unroll]] for (uint c = 0u; c < COLS; ++c) acc[r * COLS + c] += w * x[x_row[c] + e];
        }
    }
#endif

#ifdef USE_SUBGROUP
    [[unroll]] for (uint k = 0u; k < NACC; ++k) acc[k] = subgroupAdd(acc[k]);
    if (gl_NumSubgroups == 1u) {  // one subgroup per workgroup: no shared memory, no barrier
        if (subgroupElect()) {
            [[unroll]] for (uint k = 0u; k < NACC; ++k) store_acc(row0, k, acc[k]);
        }
        return;
    }
    if (subgroupElect()) {
        [[unroll]] for (uint k = 0u; k < NACC; ++k) partial[k * WG + gl_SubgroupID] = acc[k];
    }
    barrier();
    for (uint k = tid; k < NACC; k += WG) {
        float sum = 0.0;
        for (uint i = 0u; i < gl_NumSubgroups; ++i) sum += partial[k * WG + i];
        store_acc(row0, k, sum);
    }
#else
    [[unroll]] for (uint k = 0u; k < NACC; ++k) partial[k * WG + tid] = acc[k];
    barrier();
    for (uint stride = WG / 2u; stride > 0u; stride >>= 1) {
        if (tid < stride) {
            [[unroll]] for (uint k = 0u; k < NACC; ++k) partial[k * WG + tid] += partial[k * WG + tid + stride];
        }
        barrier();
    }
    for (uint k = tid; k < NACC; k += WG) store_acc(row0, k, partial[k * WG]);
#endif
}
