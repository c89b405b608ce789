#version 450
// Y = X W^T for several tokens (prefill): a tiled matrix product. A workgroup computes a tile
// of BM weight rows x BN tokens; each step it decodes a BM x BK slice of W and loads a BN x BK
// slice of X into shared memory (fp32), then every thread accumulates a TM x TN register tile.
// Tile sizes are specialization constants chosen by the host to fit the device's shared memory.
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256u;  // = (BM / TM) * (BN / TN)
layout(constant_id = 1) const uint BM = 64u;   // weight rows per tile
layout(constant_id = 2) const uint BN = 64u;   // tokens per tile
layout(constant_id = 3) const uint BK = 16u;   // elements of K per step (a multiple of 4 dividing 32)
layout(constant_id = 4) const uint TM = 4u;    // rows per thread
layout(constant_id = 5) const uint TN = 4u;    // tokens per thread

#include "dequant.glsl"  // binding 0: the weight words (this dispatch's row window)
layout(std430, binding = 1) readonly buffer X { float x[]; };  // [n_tokens, n_in] from x_base
layout(std430, binding = 2) buffer Y { float y[]; };           // [n_tokens, y_stride] from y_base

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
} pc;

// +1 padding keeps the transposed stores of the x tile free of bank conflicts.
shared float w_tile[BK * (BM + 1u)];  // [BK][BM + 1]
shared float x_tile[BK * (BN + 1u)];  // [BK][BN + 1]

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

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN;
    const uint tx = tid % (BM / TM), ty = tid / (BM / TM);

    float acc[TM * TN];  // [TN][TM]
    [[unroll]] for (uint i = 0u; i < TM * TN; ++i) acc[i] = 0.0;

    for (uint k0 = 0u; k0 < pc.n_in; k0 += BK) {
        // W slice: quad (r, kq) -> w_tile[4 kq + i][r]; consecutive threads take consecutive rows.
        for (uint idx = tid; idx < BM * (BK / 4u); idx += WG) {
            const uint r = idx % BM, kq = idx / BM;
            const uint row = m0 + r, k = k0 + 4u * kq;
            const vec4 v = (row < pc.n_rows && k < pc.n_in) ? weight_quad(row, k) : vec4(0.0);
            [[unroll]] for (uint i = 0u; i < 4u; ++i) w_tile[(4u * kq + i) * (BM + 1u) + r] = v[i];
        }
        // X slice: consecutive threads read consecutive floats of a token.
        for (uint idx = tid; idx < BN * BK; idx += WG) {
            const uint kk = idx % BK, t = idx / BK;
            const uint tok = n0 + t, k = k0 + kk;
            x_tile[kk * (BN + 1u) + t] = (tok < pc.n_tokens && k < pc.n_in) ? x[pc.x_base + tok * pc.n_in + k] : 0.0;
        }
        barrier();
        for (uint kk = 0u; kk < BK; ++kk) {
            float a[TM], b[TN];
            [[unroll]] for (uint i = 0u; i < TM; ++i) a[i] = w_tile[kk * (BM + 1u) + tx + i * (BM / TM)];
            [[unroll]] for (uint j = 0u; j < TN; ++j) b[j] = x_tile[kk * (BN + 1u) + ty + j * (BN / TN)];
            [[unroll]] for (uint j = 0u; j < TN; ++j)
                [[unroll]] for (uint i = 0u; i < TM; ++i) acc[j * TM + i] += a[i] * b[j];
        }
        barrier();
    }

    [[unroll]] for (uint j = 0u; j < TN; ++j) {
        const uint tok = n0 + ty + j * (BN / TN);
        [[unroll]] for (uint i = 0u; i < TM; ++i) {
            const uint row = m0 + tx + i * (BM / TM);
            if (tok < pc.n_tokens && row < pc.n_rows) {
                const uint yi = pc.y_base + tok * pc.y_stride + row;
                y[yi] = pc.accumulate != 0u ? y[yi] + acc[j * TM + i] : acc[j * TM + i];
            }
        }
    }
}
