#version 450
// Grouped expert matmul for many tokens (MoE prefill): the tiled product of matmul.comp over
// the pairs moe_sort grouped by expert. Workgroup (x, y) computes BM rows of one expert for up
// to BN of its pairs: tile y + tile0 counts over the experts of this dispatch in order, each
// expert taking ceil(count / BN) tiles, so the host can size the grid without reading the
// counts back (tiles past the last one exit). Inputs are gathered by pair: x row p / top_k
// (the token's input) or p (an input per pair); output row p of y. The expert weights are one
// 3-D tensor {n_in, n_out, n_expert}, expert e's matrix the rows [e n_out, (e + 1) n_out).
// COOPMAT: the tile's product on cooperative matrices, as matmul.comp's COOPMAT kernel (fp16
// slices in shared memory, fp32 accumulators, a staging tile per subgroup for the output).
#ifdef COOPMAT
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256u;        // = (BM / TM) * (BN / TN)
layout(constant_id = 1) const uint BM = 64u;         // weight rows per tile
layout(constant_id = 2) const uint BN = 64u;         // pairs per tile
layout(constant_id = 3) const uint BK = 16u;         // elements of K per step (a multiple of 4 dividing 32)
#ifdef COOPMAT
layout(constant_id = 4) const uint WM = 32u;         // weight rows per subgroup (a multiple of CM)
layout(constant_id = 5) const uint WN = 32u;         // pairs per subgroup (a multiple of CN)
layout(constant_id = 6) const uint CM = 16u;         // the cooperative matrix shape (matmul.comp)
layout(constant_id = 7) const uint CN = 16u;
layout(constant_id = 8) const uint CK = 16u;
#else
layout(constant_id = 4) const uint TM = 4u;          // rows per thread (a multiple of 4)
layout(constant_id = 5) const uint TN = 4u;          // pairs per thread (a multiple of 4)
#endif

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
    return dequant4(row_addr + (k / BLOCK_ELEMS) * BLOCK_BYTES, (k % BLOCK_ELEMS) >> 2);
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

#ifdef COOPMAT
const uint LDS = BK + 8u;        // padded rows (matmul.comp)
shared float16_t w_s[BM * LDS];  // [BM][BK] weights, row-major (A)
shared float16_t x_s[BN * LDS];  // [BN][BK] gathered inputs: B = x_s^T, read column-major
shared float c_s[BM / WM * (BN / WN) * CM * CN];  // a CM x CN staging tile per subgroup

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint expert = claim_tile(tid);
    if (expert == NONE) return;
    const uint count = tile_count;
    const uint expert_addr = pc.w_base + (expert - pc.expert_first) * pc.expert_bytes;
    const uint m0 = gl_WorkGroupID.x * BM;
    const uint sg = gl_SubgroupID;
    const uint sm = (sg % (BM / WM)) * WM, sn = (sg / (BM / WM)) * WN;
    const uint FM = WM / CM, FN = WN / CN;

    fcoopmatNV<32, gl_ScopeSubgroup, CM, CN> acc[FM * FN];
    [[unroll]] for (uint i = 0u; i < FM * FN; ++i) acc[i] = fcoopmatNV<32, gl_ScopeSubgroup, CM, CN>(0.0);

    for (uint k0 = 0u; k0 < pc.n_in; k0 += BK) {
        for (uint idx = tid; idx < BM * (BK / 4u); idx += WG) {
            const uint r = idx / (BK / 4u), kq = idx % (BK / 4u);
            const uint row = m0 + r, k = k0 + 4u * kq;
            const vec4 v = (row < pc.n_rows && k < pc.n_in) ? weight_quad(expert_addr, row, k) : vec4(0.0);
            [[unroll]] for (uint i = 0u; i < 4u; ++i) w_s[r * LDS + 4u * kq + i] = float16_t(v[i]);
        }
        for (uint idx = tid; idx < BN * (BK / 4u); idx += WG) {
            const uint t = idx / (BK / 4u), kq = idx % (BK / 4u);
            const uint k = k0 + 4u * kq;
            const vec4 v = (t < count && k < pc.n_in) ? x_quad(tile_x_row[t], k) : vec4(0.0);
            [[unroll]] for (uint i = 0u; i < 4u; ++i) x_s[t * LDS + 4u * kq + i] = float16_t(v[i]);
        }
        barrier();
        [[unroll]] for (uint kk = 0u; kk < BK; kk += CK) {
            fcoopmatNV<16, gl_ScopeSubgroup, CK, CN> b[FN];
            [[unroll]] for (uint j = 0u; j < FN; ++j)
                coopMatLoadNV(b[j], x_s, (sn + j * CN) * LDS + kk, LDS, true);
            [[unroll]] for (uint i = 0u; i < FM; ++i) {
                fcoopmatNV<16, gl_ScopeSubgroup, CM, CK> a;
                coopMatLoadNV(a, w_s, (sm + i * CM) * LDS + kk, LDS, false);
                [[unroll]] for (uint j = 0u; j < FN; ++j) acc[i * FN + j] = coopMatMulAddNV(a, b[j], acc[i * FN + j]);
            }
        }
        barrier();
    }

    const uint stage = sg * CM * CN;
    [[unroll]] for (uint i = 0u; i < FM; ++i) {
        [[unroll]] for (uint j = 0u; j < FN; ++j) {
            coopMatStoreNV(acc[i * FN + j], c_s, stage, CM, true);
            subgroupBarrier();
            for (uint e = gl_SubgroupInvocationID; e < CM * CN; e += gl_SubgroupSize) {
                const uint row = m0 + sm + i * CM + e % CM, t = sn + j * CN + e / CM;
                if (row < pc.n_rows && t < count) {
                    float v = c_s[stage + e];
                    if (pc.has_bias != 0u) v += bias[pc.bias_base + expert * pc.bias_stride + row];
                    y[pc.y_base + tile_pair[t] * pc.y_stride + row] = v;
                }
            }
            subgroupBarrier();
        }
    }
}
#else
shared vec4 w_tile[BK * BM / 4u];  // [BK][BM] weights, k-major
shared vec4 x_tile[BK * BN / 4u];  // [BK][BN] activations, k-major

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint expert = claim_tile(tid);
    if (expert == NONE) return;
    const uint count = tile_count;
    const uint expert_addr = pc.w_base + (expert - pc.expert_first) * pc.expert_bytes;
    const uint m0 = gl_WorkGroupID.x * BM;
    const uint tx = tid % (BM / TM), ty = tid / (BM / TM);
    // Thread rows: g * RG + 4 tx + c (g < TM/4, c < 4); pairs: h * TG + 4 ty + c.
    const uint RG = 4u * BM / TM, TG = 4u * BN / TN;

    vec4 acc[TN * TM / 4u];  // [TN][TM/4]: acc[j * TM/4 + g][c] is row g RG + 4 tx + c, column j
    [[unroll]] for (uint i = 0u; i < TN * TM / 4u; ++i) acc[i] = vec4(0.0);

    for (uint k0 = 0u; k0 < pc.n_in; k0 += BK) {
        // W slice: consecutive threads take consecutive rows (contiguous shared stores).
        for (uint idx = tid; idx < BM * (BK / 4u); idx += WG) {
            const uint r = idx % BM, kq = idx / BM;
            const uint row = m0 + r, k = k0 + 4u * kq;
            const vec4 v = (row < pc.n_rows && k < pc.n_in) ? weight_quad(expert_addr, row, k) : vec4(0.0);
            [[unroll]] for (uint i = 0u; i < 4u; ++i) w_tile[((4u * kq + i) * BM + r) >> 2][r & 3u] = v[i];
        }
        // X slice: the gathered input rows of the tile's pairs.
        for (uint idx = tid; idx < BN * (BK / 4u); idx += WG) {
            const uint t = idx % BN, kq = idx / BN;
            const uint k = k0 + 4u * kq;
            const vec4 v = (t < count && k < pc.n_in) ? x_quad(tile_x_row[t], k) : vec4(0.0);
            [[unroll]] for (uint i = 0u; i < 4u; ++i) x_tile[((4u * kq + i) * BN + t) >> 2][t & 3u] = v[i];
        }
        barrier();
        for (uint kk = 0u; kk < BK; ++kk) {
            vec4 a[TM / 4u], b[TN / 4u];
            [[unroll]] for (uint g = 0u; g < TM / 4u; ++g) a[g] = w_tile[(kk * BM + g * RG) / 4u + tx];
            [[unroll]] for (uint h = 0u; h < TN / 4u; ++h) b[h] = x_tile[(kk * BN + h * TG) / 4u + ty];
            [[unroll]] for (uint h = 0u; h < TN / 4u; ++h)
                [[unroll]] for (uint c = 0u; c < 4u; ++c)
                    [[unroll]] for (uint g = 0u; g < TM / 4u; ++g)
                        acc[(4u * h + c) * (TM / 4u) + g] += a[g] * b[h][c];
        }
        barrier();
    }

    [[unroll]] for (uint j = 0u; j < TN; ++j) {
        const uint t = (j / 4u) * TG + 4u * ty + (j % 4u);
        if (t >= count) continue;
        const uint p = tile_pair[t];
        [[unroll]] for (uint g = 0u; g < TM / 4u; ++g) {
            [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                const uint row = m0 + g * RG + 4u * tx + c;
                if (row < pc.n_rows) {
                    float v = acc[j * (TM / 4u) + g][c];
                    if (pc.has_bias != 0u) v += bias[pc.bias_base + expert * pc.bias_stride + row];
                    y[pc.y_base + p * pc.y_stride + row] = v;
                }
            }
        }
    }
}
#endif
