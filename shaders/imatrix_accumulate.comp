#version 450
// Importance-matrix collection (vkllm imatrix): for each input column j of a weight's matmul,
//   sums[m][j] += sum of x[r][j]^2 over the rows r of x that matrix m multiplies
//   counts[m]  += the number of those rows
// A plain matrix (m = 0) multiplies every row. Stacked experts (ROUTED) multiply the routed
// (token, slot) pairs: pair p = token * top_k + slot goes to matrix experts[p], and its row of x
// is p (x_per_pair: one input per pair) or p / top_k (the token's input).
// One invocation per column (x of the grid), one row of workgroups per matrix (y). Each column
// sums its rows in order, so repeated runs give the same bits.
#include "common.glsl"
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };  // [n_rows] rows x_stride apart
layout(std430, binding = 1) buffer Sums { float sums[]; };     // [n_mat][n_cols]
layout(std430, binding = 2) buffer Counts { int counts[]; };   // [n_mat]
#ifdef ROUTED
layout(std430, binding = 3) readonly buffer Ids { int experts[]; };  // [n_pairs]
#endif

layout(push_constant) uniform Push {
    uint n_cols;
    uint n_rows;        // rows of x (plain) or routed pairs (ROUTED)
    uint x_shift;       // element offsets inside the bound windows
    uint x_stride;      // elements from one row of x to the next
    uint sums_shift;
    uint counts_shift;
    uint ids_shift;
    uint top_k;         // ROUTED: slots per token
    uint x_per_pair;    // ROUTED: 1 when x holds one row per pair
} pc;

void main() {
    const uint j = gl_GlobalInvocationID.x;
    const uint m = gl_WorkGroupID.y;
    if (j >= pc.n_cols) return;
    float acc = 0.0;
    int rows = 0;
#ifdef ROUTED
    for (uint p = 0u; p < pc.n_rows; ++p) {
        if (experts[pc.ids_shift + p] != int(m)) continue;
        const uint r = pc.x_per_pair != 0u ? p : p / pc.top_k;
        const float v = x[pc.x_shift + r * pc.x_stride + j];
        acc += v * v;
        ++rows;
    }
#else
    for (uint r = 0u; r < pc.n_rows; ++r) {
        const float v = x[pc.x_shift + r * pc.x_stride + j];
        acc += v * v;
    }
    rows = int(pc.n_rows);
#endif
    sums[pc.sums_shift + m * pc.n_cols + j] += acc;
    if (j == 0u) counts[pc.counts_shift + m] += rows;
}
