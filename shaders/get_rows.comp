#version 450
// Embedding lookup: out[t, :] = dequant(table row ids[t]). One thread per 4 elements of a row;
// grid y walks the tokens. A table larger than one binding is dispatched once per row window:
// each dispatch writes only the tokens whose id falls in its window; ids outside the table
// give rows of zeros (written by the first window's dispatch).
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint W_ALIGNED = 0u;  // 1: the weight rows in their 16-byte-aligned layout (dequant.glsl)

#define IQ_GRID_BINDING 3  // the grid i-quants' codebook (dequant_iq_grid.glsl)
#include "dequant.glsl"  // binding 0: the table words (this dispatch's row window)
layout(std430, binding = 1) readonly buffer Ids { int ids[]; };    // [n]
layout(std430, binding = 2) writeonly buffer Out { float o[]; };  // [n, n_in] from out_base

layout(push_constant) uniform Push {
    uint n_in;          // row length (elements)
    uint n_table_rows;  // rows of the whole table
    uint row_first;     // first table row in this dispatch's window
    uint row_count;     // rows in the window
    uint w_base;        // byte address of row row_first in the weight binding
    uint row_bytes;     // bytes per row
    uint id_base;       // index of this dispatch's first id
    uint out_base;      // index of out[0, 0] for this dispatch's first token
    uint zero_invalid;  // 1: write zeros for ids outside the table
} pc;

void main() {
    const uint e = 4u * gl_GlobalInvocationID.x;
    const uint t = gl_WorkGroupID.y;
    if (e >= pc.n_in) return;
    const int id = ids[pc.id_base + t];
    const uint o0 = pc.out_base + t * pc.n_in + e;
    const uint n_here = min(4u, pc.n_in - e);
    if (id < 0 || uint(id) >= pc.n_table_rows) {
        if (pc.zero_invalid != 0u)
            for (uint i = 0u; i < n_here; ++i) o[o0 + i] = 0.0;
        return;
    }
    if (uint(id) < pc.row_first || uint(id) - pc.row_first >= pc.row_count) return;
    const uint row_addr = pc.w_base + (uint(id) - pc.row_first) * pc.row_bytes;
    vec4 v;
#ifdef W_FLOAT
    if (n_here < 4u) {
        for (uint i = 0u; i < n_here; ++i) o[o0 + i] = w_elem(row_addr, e + i);
        return;
    }
#endif
    v = dequant4(block_address(row_addr, e / BLOCK_ELEMS), (e % BLOCK_ELEMS) >> 2);
    o[o0] = v.x;
    o[o0 + 1u] = v.y;
    o[o0 + 2u] = v.z;
    o[o0 + 3u] = v.w;
}
