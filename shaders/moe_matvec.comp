#version 450
// Expert matrix-vector products for few tokens (MoE decode): workgroup (x, y) computes ROWS
// consecutive rows of pair y's expert, y[p, row] = W_{experts[p]}[row, :] . x[row_of(p), :],
// with p = pair0 + y a (token, slot) pair and row_of(p) = p / top_k (the token's input, shared by
// its slots) or p (an input per pair). The expert weights are one 3-D tensor {n_in, n_out,
// n_expert}: expert e's matrix is the rows [e n_out, (e + 1) n_out). This dispatch's weight
// binding holds experts [expert_first, expert_first + expert_count) (rows [0, n_rows) of each
// from the window's row 0); pairs routed elsewhere exit. The dot product is matvec.comp's:
// threads stride over 32-element units dotted in the quantized domain (dequant_dot.glsl), x
// rounded in the shader with ROUND_X, int8 dots with INT_DOT (matvec_unit.glsl).
// XQ (quantized x): the inputs were quantized beforehand, once per token or pair for every
// workgroup that reads them (quantize_act.comp; ops::QuantizedActs, rows packed): binding 1
// holds their int8 quants from word x_base, block scales from word xq_scales and quant sums from
// word xq_sums, and each pair reads its row's (matvec_xq.glsl); with INT_DOT the quants are
// dotted as they are (the K-quants too, against blocks of 256). ROUND_X is 0.
// GLU: the experts' SwiGLU input, y = silu(W_gate x) * (W_up x): the binding holds both tensors,
// up's expert e row r up_delta bytes after gate's; each workgroup dots the same rows of both
// against one load of x (no bias), so the gate and up outputs never go to memory.
#include "common.glsl"
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128u;        // threads per workgroup (a power of two)
layout(constant_id = 1) const uint ROWS = 2u;        // rows per workgroup
layout(constant_id = 2) const uint ROUND_X = 0u;     // 1: round x as llama.cpp's CPU backend does (matvec.comp)
layout(constant_id = 3) const uint MV_ROLLED = 0u;   // 1: the rows' loop stays a loop (CPU drivers; matvec_unit.glsl)
layout(constant_id = 4) const uint W_ALIGNED = 0u;   // 1: the weight rows in their 16-byte-aligned layout (dequant.glsl)

#define IQ_GRID_BINDING 5  // the grid i-quants' codebook (dequant_iq_grid.glsl)
#include "dequant.glsl"  // binding 0: the weight words (this dispatch's window)
#include "dequant_dot.glsl"
#include "fp16.glsl"
#include "matvec_round.glsl"
layout(std430, binding = 1) readonly buffer X { float x[]; };    // [n_x_rows, n_in] from x_base
layout(std430, binding = 1) readonly buffer X4 { vec4 x4[]; };   // the same, as vec4
layout(std430, binding = 2) buffer Y { float y[]; };             // [n_pairs, y_stride] from y_base
layout(std430, binding = 3) readonly buffer Ids { int expert_ids[]; };  // [n_pairs] from ids_base
layout(std430, binding = 4) readonly buffer Bias { float bias[]; };     // [n_expert, bias_stride]

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
    uint y_stride;      // floats between pairs in y (n_out, or a wider row's)
    uint ids_base;      // index of expert_ids[0]
    uint pair0;         // first pair of this dispatch
    uint n_pairs;       // pairs in this dispatch
    uint top_k;
    uint x_per_pair;    // 1: x row p; 0: x row p / top_k
    uint x_vec4;        // 1: x_base, n_in and x_stride are multiples of 4, so x quads can be read as vec4
    uint has_bias;      // 1: y += bias[e, row]
    uint bias_base;     // index of bias[expert 0, window's row 0]
    uint bias_stride;   // floats between experts in bias (n_out)
    uint up_delta;      // GLU: bytes from a gate row to the same up row
    uint x_stride;      // floats between x rows (0: n_in, packed rows)
    uint xq_scales;     // XQ: word index of x row 0's block scales in the x binding
    uint xq_sums;       // XQ: word index of x row 0's quant sums in the x binding
} pc;

#ifdef GLU
const uint NACC = 2u * ROWS;  // acc[r]: gate row r, acc[ROWS + r]: up row r
float silu(float v) { return v / (1.0 + exp(-v)); }  // as shaders/elementwise.comp's SWIGLU
#else
const uint NACC = ROWS;
#endif

shared float partial[NACC * WG];  // [NACC][WG]

uint row_addr[NACC];
float acc[NACC];
uint x_row_base;

#ifdef XQ
// This pair's row of the quantized x (set by main): its quants, scales and sums.
uint xq_quants, xq_scales_row, xq_sums_row;
#define XQ_QUANTS xq_quants
#define XQ_SCALES xq_scales_row
#define XQ_SUMS xq_sums_row
#include "matvec_xq.glsl"
const uint XQ_SUM_GROUP = XQ_BLOCK == 32u ? 32u : 16u;  // elements per quant sum
#endif

vec4 x_quad(uint e) {
#ifdef XQ
    return xq_quad(e);
#else
    const uint i = x_row_base + e;
    if (pc.x_vec4 != 0u) return x4[i >> 2];
    return vec4(x[i], x[i + 1u], x[i + 2u], x[i + 3u]);
#endif
}

#include "matvec_unit.glsl"

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint row0 = gl_WorkGroupID.x * ROWS;
    if (gl_WorkGroupID.y >= pc.n_pairs) return;  // uniform across the workgroup
    const uint p = pc.pair0 + gl_WorkGroupID.y;
    const int id = expert_ids[pc.ids_base + p];
    if (id < int(pc.expert_first) || id >= int(pc.expert_first + pc.expert_count)) return;  // uniform
    const uint ex = uint(id) - pc.expert_first;
    const uint x_row = pc.x_per_pair != 0u ? p : p / pc.top_k;
#ifdef XQ
    xq_quants = pc.x_base + x_row * (pc.n_in / 4u);
    xq_scales_row = pc.xq_scales + x_row * (pc.n_in / XQ_BLOCK);
    xq_sums_row = pc.xq_sums + x_row * (pc.n_in / XQ_SUM_GROUP);
#else
    x_row_base = pc.x_base + x_row * (pc.x_stride != 0u ? pc.x_stride : pc.n_in);
#endif

    // Rows past the end repeat the last row (branch-free); their sums are not written.
    [[unroll]] for (uint r = 0u; r < NACC; ++r) {
        row_addr[r] = pc.w_base + ex * pc.expert_bytes + min(row0 + r % ROWS, pc.n_rows - 1u) * pc.row_bytes +
                      (r < ROWS ? 0u : pc.up_delta);
        acc[r] = 0.0;
    }

    const uint n_units = (pc.n_in / BLOCK_ELEMS) * MV_UNITS;  // float types: whole groups of 32
    uint unit = tid;
    for (; unit + WG < n_units; unit += 2u * WG) {
        accumulate_unit(unit);
        accumulate_unit(unit + WG);
    }
    if (unit < n_units) accumulate_unit(unit);
#ifdef W_FLOAT
    // Float rows may end in a partial group of 32.
    for (uint e = (pc.n_in / BLOCK_ELEMS) * BLOCK_ELEMS + tid; e < pc.n_in; e += WG) {
        const float xe = ROUND_X != 0u ? round_elem(x[x_row_base + e]) : x[x_row_base + e];
        [[unroll]] for (uint r = 0u; r < NACC; ++r) acc[r] += w_elem(row_addr[r], e) * xe;
    }
#endif

#ifdef USE_SUBGROUP
    [[unroll]] for (uint r = 0u; r < NACC; ++r) acc[r] = subgroupAdd(acc[r]);
    if (subgroupElect()) {
        [[unroll]] for (uint r = 0u; r < NACC; ++r) partial[r * WG + gl_SubgroupID] = acc[r];
    }
    barrier();
    const uint n_partials = gl_NumSubgroups;
#else
    [[unroll]] for (uint r = 0u; r < NACC; ++r) partial[r * WG + tid] = acc[r];
    barrier();
    for (uint stride = WG / 2u; stride > 1u; stride >>= 1) {
        if (tid < stride) {
            [[unroll]] for (uint r = 0u; r < NACC; ++r) partial[r * WG + tid] += partial[r * WG + tid + stride];
        }
        barrier();
    }
    const uint n_partials = min(WG, 2u);
#endif
    if (tid < ROWS && row0 + tid < pc.n_rows) {
        float sum = 0.0;
        for (uint i = 0u; i < n_partials; ++i) sum += partial[tid * WG + i];
#ifdef GLU
        float up_sum = 0.0;
        for (uint i = 0u; i < n_partials; ++i) up_sum += partial[(ROWS + tid) * WG + i];
        sum = silu(sum) * up_sum;
#else
        if (pc.has_bias != 0u) sum += bias[pc.bias_base + uint(id) * pc.bias_stride + row0 + tid];
#endif
        y[pc.y_base + p * pc.y_stride + row0 + tid] = sum;
    }
}
