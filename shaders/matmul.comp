#version 450
// Y = X W^T for several tokens (prefill): the tiled matrix product of matmul_tile.glsl (scalar or,
// with COOPMAT, on NVIDIA's tensor cores), a workgroup's tile BM weight rows x BN tokens.
#ifdef COOPMAT
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#include "common.glsl"

layout(local_size_x_id = 0) in;
#include "matmul_tile.glsl"  // the tile sizes and the tiled product

#define IQ_GRID_BINDING 3  // the grid i-quants' codebook (dequant_iq_grid.glsl)
#include "dequant.glsl"  // binding 0: the weight words (this dispatch's row window)
layout(std430, binding = 1) readonly buffer X { float x[]; };    // [n_tokens, n_in] from x_base
layout(std430, binding = 1) readonly buffer X4 { vec4 x4[]; };   // the same, as vec4
layout(std430, binding = 2) buffer Y { float y[]; };             // [n_tokens, y_stride] from y_base

layout(push_constant) uniform Push {
    uint n_in;        // row length (elements)
    uint n_rows;      // weight rows in this dispatch
    uint n_tokens;    // tokens in this dispatch
    uint w_base;      // byte address of row 0 in the weight binding
    uint row_bytes;   // bytes per row
    uint x_base;      // index of x[0, 0] in the x binding
    uint y_base;      // index of y[0, 0] in the y binding
    uint y_stride;    // floats between tokens in y
    uint accumulate;  // 1: y += X W^T (fused residual add)
    uint x_vec4;      // 1: x_base and n_in are multiples of 4, so x quads can be read as vec4
} pc;

// Elements k..k+3 of weight row `row` (zero past the row's end).
vec4 weight_quad(uint row, uint k) {
    const uint row_addr = pc.w_base + row * pc.row_bytes;
#ifdef W_FLOAT
    if (k + 4u > pc.n_in) {
        vec4 v = vec4(0.0);
        for (uint i = 0u; i < 4u && k + i < pc.n_in; ++i) v[i] = w_elem(row_addr, k + i);
        return v;
    }
#endif
    return dequant4(block_address(row_addr, k / BLOCK_ELEMS), (k % BLOCK_ELEMS) >> 2);
}

// Elements k..k+3 of token `tok`'s activations (zero past the row's end).
vec4 x_quad(uint tok, uint k) {
    const uint i = pc.x_base + tok * pc.n_in + k;
    if (pc.x_vec4 != 0u) return x4[i >> 2];
    vec4 v = vec4(0.0);
    for (uint c = 0u; c < 4u && k + c < pc.n_in; ++c) v[c] = x[i + c];
    return v;
}

uint m0, n0;  // the tile's first weight row and token (set by main)

vec4 tile_w_quad(uint r, uint k) {
    const uint row = m0 + r;
    return (row < pc.n_rows && k < pc.n_in) ? weight_quad(row, k) : vec4(0.0);
}
vec4 tile_x_quad(uint c, uint k) {
    const uint tok = n0 + c;
    return (tok < pc.n_tokens && k < pc.n_in) ? x_quad(tok, k) : vec4(0.0);
}
void tile_store(uint r, uint c, float v) {
    const uint row = m0 + r, tok = n0 + c;
    if (row < pc.n_rows && tok < pc.n_tokens) {
        const uint yi = pc.y_base + tok * pc.y_stride + row;
        y[yi] = pc.accumulate != 0u ? y[yi] + v : v;
    }
}


void main() {
    m0 = gl_WorkGroupID.x * BM;
    n0 = gl_WorkGroupID.y * BN;
    tile_product(gl_LocalInvocationID.x, pc.n_in);
}
