#version 450
// Grouped expert matmul for many tokens (MoE prefill): the tiled product of matmul.comp over
// the pairs moe_sort grouped by expert. Workgroup (x, y) computes BM rows of one expert for up
// to BN of its pairs: tile y + tile0 counts over the experts of this dispatch in order, each
// expert taking ceil(count / BN) tiles, so the host can size the grid without reading the
// counts back (tiles past the last one exit). Inputs are gathered by pair: x row p / top_k
// (the token's input) or p (an input per pair); output row p of y. The expert weights are one
// 3-D tensor {n_in, n_out, n_expert}, expert e's matrix the rows [e n_out, (e + 1) n_out).
// The tile's product is matmul_tile.glsl's (scalar or, with COOPMAT, on NVIDIA's tensor cores).
#ifdef COOPMAT
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#include "common.glsl"

layout(local_size_x_id = 0) in;
#include "matmul_tile.glsl"  // the tile sizes and the tiled product

#define IQ_GRID_BINDING 5  // the grid i-quants' codebook (dequant_iq_grid.glsl)
#include "dequant.glsl"  // binding 0: the weight words (this dispatch's window)
layout(std430, binding = 1) readonly buffer X { float x[]; };    // [n_x_rows, n_in] from x_base
layout(std430, binding = 1) readonly buffer X4 { vec4 x4[]; };   // the same, as vec4
layout(std430, binding = 2) buffer Y { float y[]; };             // [n_pairs, y_stride] from y_base
layout(std430, binding = 3) readonly buffer Sorted { int sorted[]; };  // moe_sort's output
layout(std430, binding = 4) readonly buffer Bias { float bias[]; };    // [n_expert, bias_stride]

layout(push_constant) uniform Push {
    uint n_in;          // row length (elements)
    uint n_rows;        // rows of each expert in this dispatch
    uint w_base;        // byte address of expert_first's row 0 in the weight binding
    uint row_bytes;     // bytes per row
    uint expert_bytes;  // bytes per expert (n_out rows)
    uint expert_first;  // experts in the weight binding
    uint expert_count;
    uint x_base;        // index of x[0, 0] in the x binding
    uint y_base;        // index of y[0, window's row 0] in the y binding
    uint y_stride;      // floats between pairs in y (n_out)
    uint sort_base;     // index of moe_sort's counts in the sorted binding
    uint n_expert;      // experts in the sort (its counts, offsets, list follow each other)
    uint top_k;
    uint x_per_pair;    // 1: x row p; 0: x row p / top_k
    uint x_vec4;        // 1: x_base and n_in are multiples of 4, so x quads can be read as vec4
    uint tile0;         // first tile of this dispatch
    uint has_bias;      // 1: y += bias[e, row]
    uint bias_base;     // index of bias[expert 0, window's row 0]
    uint bias_stride;   // floats between experts in bias (n_out)
} pc;

const uint NONE = 0xffffffffu;

shared uint tile_pair[BN];         // output row (pair) of each tile column
shared uint tile_x_row[BN];        // input row of each tile column
shared uint tile_expert, tile_count;

// Elements k..k+3 of row `row` of the tile's expert (zero past the row's end).
vec4 weight_quad(uint expert_addr, uint row, uint k) {
    const uint row_addr = expert_addr + row * pc.row_bytes;
#ifdef W_FLOAT
    if (k + 4u > pc.n_in) {
        vec4 v = vec4(0.0);
        for (uint i = 0u; i < 4u && k + i < pc.n_in; ++i) v[i] = w_elem(row_addr, k + i);
        return v;
    }
#endif
    return dequant4(block_address(row_addr, k / BLOCK_ELEMS), (k % BLOCK_ELEMS) >> 2);
}

// Elements k..k+3 of input row `x_row` (zero past the row's end).
vec4 x_quad(uint x_row, uint k) {
    const uint i = pc.x_base + x_row * pc.n_in + k;
    if (pc.x_vec4 != 0u) return x4[i >> 2];
    vec4 v = vec4(0.0);
    for (uint c = 0u; c < 4u && k + c < pc.n_in; ++c) v[c] = x[i + c];
    return v;
}

// Which expert and which of its pairs this workgroup's tile takes: the expert (NONE past the last
// tile), tile_count its pairs here, tile_pair and tile_x_row their output and input rows.
// Every invocation returns the same (the values are read from shared memory).
uint claim_tile(const uint tid) {
    if (tid == 0u) {
        uint j = gl_WorkGroupID.y + pc.tile0;
        tile_expert = NONE;
        tile_count = 0u;
        for (uint e = pc.expert_first; e < pc.expert_first + pc.expert_count; ++e) {
            const uint count = uint(sorted[pc.sort_base + e]);
            const uint tiles = (count + BN - 1u) / BN;
            if (j < tiles) {
                tile_expert = e;
                tile_count = min(BN, count - j * BN);
                tile_pair[0] = uint(sorted[pc.sort_base + pc.n_expert + e]) + j * BN;  // first sorted slot
                break;
            }
            j -= tiles;
        }
    }
    barrier();
    const uint expert = tile_expert, count = tile_count;
    if (expert == NONE) return NONE;  // past the last tile (uniform: read from shared memory)
    const uint first = tile_pair[0];
    barrier();  // every invocation has read tile_pair[0]
    const uint list = pc.sort_base + 2u * pc.n_expert + 1u;
    for (uint i = tid; i < BN; i += WG) {
        const uint p = i < count ? uint(sorted[list + first + i]) : 0u;
        tile_pair[i] = p;
        tile_x_row[i] = pc.x_per_pair != 0u ? p : p / pc.top_k;
    }
    barrier();
    return expert;
}

// This workgroup's tile (set by main): its expert, the expert's rows at byte expert_addr, its
// first row, and the number of its columns (pairs) that hold a pair.
uint tile_expert_id, expert_addr, m0, count;

vec4 tile_w_quad(uint r, uint k) {
    const uint row = m0 + r;
    return (row < pc.n_rows && k < pc.n_in) ? weight_quad(expert_addr, row, k) : vec4(0.0);
}
vec4 tile_x_quad(uint c, uint k) {
    return (c < count && k < pc.n_in) ? x_quad(tile_x_row[c], k) : vec4(0.0);
}
void tile_store(uint r, uint c, float v) {
    const uint row = m0 + r;
    if (row < pc.n_rows && c < count) {
        if (pc.has_bias != 0u) v += bias[pc.bias_base + tile_expert_id * pc.bias_stride + row];
        y[pc.y_base + tile_pair[c] * pc.y_stride + row] = v;
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    tile_expert_id = claim_tile(tid);
    if (tile_expert_id == NONE) return;
    count = tile_count;
    expert_addr = pc.w_base + (tile_expert_id - pc.expert_first) * pc.expert_bytes;
    m0 = gl_WorkGroupID.x * BM;
    tile_product(tid, pc.n_in);
}
