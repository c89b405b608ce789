#version 450
// Y = X W^T for several tokens (prefill): a tiled matrix product. A workgroup computes a tile
// of BM weight rows x BN tokens; each step it decodes a BM x BK slice of W and loads a BN x BK
// slice of X into shared memory, then multiplies the two slices.
//
// Two kernels share the bindings, push constants and tile loaders below:
// - the scalar kernel (default): fp32 tiles; every thread accumulates a TM x TN register tile
//   from vec4 reads of shared memory (four rows or tokens per read; a thread's rows are TM/4
//   groups of 4, spread so that a subgroup's reads are contiguous);
// - COOPMAT (GL_NV_cooperative_matrix, tensor cores): the slices are stored as fp16 and each
//   subgroup multiplies WM x BK by BK x WN with CM x CN x CK cooperative matrices (a shape the
//   device lists), accumulating in fp32; a subgroup's results leave through a CM x CN staging
//   tile in shared memory so that partial tiles are written with bounds checks.
// Tile sizes are specialization constants chosen by the host to fit the device.
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
layout(constant_id = 2) const uint BN = 64u;         // tokens per tile
layout(constant_id = 3) const uint BK = 16u;         // elements of K per step (a multiple of 4 dividing 32)
#ifdef COOPMAT
layout(constant_id = 4) const uint WM = 32u;         // weight rows per subgroup (a multiple of CM)
layout(constant_id = 5) const uint WN = 32u;         // tokens per subgroup (a multiple of CN)
layout(constant_id = 6) const uint CM = 16u;         // the cooperative matrix shape: A is CM x CK,
layout(constant_id = 7) const uint CN = 16u;         // B is CK x CN, the accumulator CM x CN
layout(constant_id = 8) const uint CK = 16u;         // (BK a multiple of CK)
#else
layout(constant_id = 4) const uint TM = 4u;          // rows per thread (a multiple of 4)
layout(constant_id = 5) const uint TN = 4u;          // tokens per thread (a multiple of 4)
#endif

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
    return dequant4(row_addr + (k / BLOCK_ELEMS) * BLOCK_BYTES, (k % BLOCK_ELEMS) >> 2);
}

// Elements k..k+3 of token `tok`'s activations (zero past the row's end).
vec4 x_quad(uint tok, uint k) {
    const uint i = pc.x_base + tok * pc.n_in + k;
    if (pc.x_vec4 != 0u) return x4[i >> 2];
    vec4 v = vec4(0.0);
    for (uint c = 0u; c < 4u && k + c < pc.n_in; ++c) v[c] = x[i + c];
    return v;
}

#ifdef COOPMAT
// Shared rows are padded by 8 halves: a row stays a multiple of 16 bytes (cooperative loads
// want 16-byte aligned rows) and consecutive rows start in different banks.
const uint LDS = BK + 8u;
shared float16_t w_s[BM * LDS];  // [BM][BK] weights, row-major (A)
shared float16_t x_s[BN * LDS];  // [BN][BK] activations: B = x_s^T, read column-major
shared float c_s[BM / WM * (BN / WN) * CM * CN];  // a CM x CN staging tile per subgroup

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN;
    const uint sg = gl_SubgroupID;                 // subgroups tile the block as (BM / WM) x (BN / WN)
    const uint sm = (sg % (BM / WM)) * WM, sn = (sg / (BM / WM)) * WN;
    const uint FM = WM / CM, FN = WN / CN;         // accumulators per subgroup, by rows and tokens

    fcoopmatNV<32, gl_ScopeSubgroup, CM, CN> acc[FM * FN];
    [[unroll]] for (uint i = 0u; i < FM * FN; ++i) acc[i] = fcoopmatNV<32, gl_ScopeSubgroup, CM, CN>(0.0);

    for (uint k0 = 0u; k0 < pc.n_in; k0 += BK) {
        // W slice: consecutive threads take consecutive quads of one row (contiguous weight bytes).
        for (uint idx = tid; idx < BM * (BK / 4u); idx += WG) {
            const uint r = idx / (BK / 4u), kq = idx % (BK / 4u);
            const uint row = m0 + r, k = k0 + 4u * kq;
            const vec4 v = (row < pc.n_rows && k < pc.n_in) ? weight_quad(row, k) : vec4(0.0);
            [[unroll]] for (uint i = 0u; i < 4u; ++i) w_s[r * LDS + 4u * kq + i] = float16_t(v[i]);
        }
        for (uint idx = tid; idx < BN * (BK / 4u); idx += WG) {
            const uint t = idx / (BK / 4u), kq = idx % (BK / 4u);
            const uint tok = n0 + t, k = k0 + 4u * kq;
            const vec4 v = (tok < pc.n_tokens && k < pc.n_in) ? x_quad(tok, k) : vec4(0.0);
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

    // Each accumulator goes to the subgroup's staging tile column-major (a token's CM rows
    // contiguous, as in y), then its lanes write the elements inside the matrix.
    const uint stage = sg * CM * CN;
    [[unroll]] for (uint i = 0u; i < FM; ++i) {
        [[unroll]] for (uint j = 0u; j < FN; ++j) {
            coopMatStoreNV(acc[i * FN + j], c_s, stage, CM, true);
            subgroupBarrier();
            for (uint e = gl_SubgroupInvocationID; e < CM * CN; e += gl_SubgroupSize) {
                const uint row = m0 + sm + i * CM + e % CM, tok = n0 + sn + j * CN + e / CM;
                if (row < pc.n_rows && tok < pc.n_tokens) {
                    const uint yi = pc.y_base + tok * pc.y_stride + row;
                    const float v = c_s[stage + e];
                    y[yi] = pc.accumulate != 0u ? y[yi] + v : v;
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
    const uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN;
    const uint tx = tid % (BM / TM), ty = tid / (BM / TM);
    // Thread rows: g * RG + 4 tx + c (g < TM/4, c < 4); tokens: h * TG + 4 ty + c.
    const uint RG = 4u * BM / TM, TG = 4u * BN / TN;

    vec4 acc[TN * TM / 4u];  // [TN][TM/4]: acc[j * TM/4 + g][c] is row g RG + 4 tx + c, token j
    [[unroll]] for (uint i = 0u; i < TN * TM / 4u; ++i) acc[i] = vec4(0.0);

    for (uint k0 = 0u; k0 < pc.n_in; k0 += BK) {
        // W slice: thread decodes quad (r, kq); consecutive threads take consecutive rows, so
        // the shared stores of a subgroup are contiguous.
        for (uint idx = tid; idx < BM * (BK / 4u); idx += WG) {
            const uint r = idx % BM, kq = idx / BM;
            const uint row = m0 + r, k = k0 + 4u * kq;
            const vec4 v = (row < pc.n_rows && k < pc.n_in) ? weight_quad(row, k) : vec4(0.0);
            [[unroll]] for (uint i = 0u; i < 4u; ++i) w_tile[((4u * kq + i) * BM + r) >> 2][r & 3u] = v[i];
        }
        // X slice: likewise one quad of K per thread, consecutive threads on consecutive tokens.
        for (uint idx = tid; idx < BN * (BK / 4u); idx += WG) {
            const uint t = idx % BN, kq = idx / BN;
            const uint tok = n0 + t, k = k0 + 4u * kq;
            const vec4 v = (tok < pc.n_tokens && k < pc.n_in) ? x_quad(tok, k) : vec4(0.0);
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
        const uint tok = n0 + (j / 4u) * TG + 4u * ty + (j % 4u);
        if (tok >= pc.n_tokens) continue;
        [[unroll]] for (uint g = 0u; g < TM / 4u; ++g) {
            [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                const uint row = m0 + g * RG + 4u * tx + c;
                if (row < pc.n_rows) {
                    const uint yi = pc.y_base + tok * pc.y_stride + row;
                    const float v = acc[j * (TM / 4u) + g][c];
                    y[yi] = pc.accumulate != 0u ? y[yi] + v : v;
                }
            }
        }
    }
}
#endif
