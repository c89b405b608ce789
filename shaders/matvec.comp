#version 450
// y = W x for one token (decode): the memory-bound matrix-vector product. A workgroup computes
// ROWS consecutive rows. Its threads stride over 32-element units of the rows (consecutive
// threads take consecutive units, so a subgroup reads a contiguous span of each row), two units
// per loop trip so each thread keeps several loads in flight; x is loaded once per unit for all
// ROWS rows and dotted in the quantized domain (dequant_dot.glsl). Partial sums are reduced in
// shared memory (USE_SUBGROUP: subgroupAdd first).
// GLU: the gated FFN input y = act(W_gate x) * (W_up x), act silu (SwiGLU) or gelu (GeGLU,
// GLU_ACT). The binding holds both matrices, up's
// row r up_delta bytes after gate's row r; a workgroup dots the same ROWS rows of both against
// one load of x, so the gate and up outputs never go to memory and need no activation pass.
// INT_DOT (Q8_0, Q4_0/1, Q5_0/1 with 8-bit activations; with XQ also Q4_K, Q5_K, Q6_K against
// x's blocks of 256): each thread rounds its unit of x to
// int8 once and dots it with every row's quants in integers (dequant_idot.glsl); the result is
// the ROUND_X path's up to float rounding (the integer sums are exact).
// XQ (quantized x): x was quantized beforehand, once for every matvec that reads it
// (shaders/quantize_act.comp; ops::QuantizedActs): binding 1 holds its int8 quants (from word
// x_base), block scales (from word norm_base) and quant sums (from word xq_sum_base), and the
// matvec reads scale * quant, the rounded value itself (matvec_xq.glsl); with INT_DOT it dots the
// quants as they are. NORM_IN and ROUND_X are 0 (the quantize dispatch did both).
// NORM_IN (decode's pre-norm fused in): x is the raw residual stream and the matvec reads
// rms_norm(x) * norm_w instead, as shaders/norm.comp computes it ((x * inv) * w with
// inv = 1 / sqrt(mean(x^2) + eps)); every workgroup sums x^2 itself (x is small and cached), so
// the norm needs no dispatch of its own, no barrier and no pass over memory.
#include "common.glsl"
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128u;        // threads per workgroup (a power of two)
layout(constant_id = 1) const uint ROWS = 2u;        // rows per workgroup

layout(constant_id = 2) const uint ROUND_X = 0u;     // 1: round x as llama.cpp's CPU backend does (below)
layout(constant_id = 3) const uint GLU_ACT = 0u;     // GLU: 0 silu (SwiGLU), 1 gelu_tanh, 2 gelu_fp16_table (GeGLU)
layout(constant_id = 4) const uint NORM_IN = 0u;     // 1: x is normalised here (RMSNorm, weight at binding 3)
layout(constant_id = 5) const uint MV_ROLLED = 0u;   // 1: the rows' loop stays a loop (CPU drivers; matvec_unit.glsl)
layout(constant_id = 6) const uint MV_TRIP = 2u;     // units each thread starts per loop trip (1..8)
layout(constant_id = 7) const uint W_ALIGNED = 0u;   // 1: the weight rows in their 16-byte-aligned layout (dequant.glsl)

#define IQ_GRID_BINDING 4  // the grid i-quants' codebook (dequant_iq_grid.glsl)
#include "dequant.glsl"  // binding 0: the weight words (this dispatch's row window)
#include "dequant_dot.glsl"
#include "fp16.glsl"

#include "matvec_round.glsl"
layout(std430, binding = 1) readonly buffer X { float x[]; };    // [n_in] from x_base
layout(std430, binding = 1) readonly buffer X4 { vec4 x4[]; };   // the same, as vec4
layout(std430, binding = 2) buffer Y { float y[]; };             // [n_rows] from y_base
layout(std430, binding = 3) readonly buffer NormW { float norm_w[]; };   // NORM_IN: [n_in] from norm_base
layout(std430, binding = 3) readonly buffer NormW4 { vec4 norm_w4[]; };  // the same, as vec4

#ifdef GLU
#include "gelu.glsl"
const uint NACC = 2u * ROWS;  // acc[r]: gate row r, acc[ROWS + r]: up row r
// The gate's activation, as shaders/elementwise.comp's SWIGLU and GEGLU [FP16_TABLE] compute it.
float glu_act(float v) {
    if (GLU_ACT == 1u) return gelu_tanh(v);
    if (GLU_ACT == 2u) return gelu_fp16_table(v);
    return v / (1.0 + exp(-v));
}
#else
const uint NACC = ROWS;
#endif

layout(push_constant) uniform Push {
    uint n_in;        // row length (elements)
    uint n_rows;      // rows in this dispatch
    uint w_base;      // byte address of row 0 in the weight binding
    uint row_bytes;   // bytes per row
    uint x_base;      // index of x[0] in the x binding
    uint y_base;      // index of y[0] in the y binding
    uint accumulate;  // 1: y += W x (fused residual add)
    uint x_vec4;      // 1: x_base is a multiple of 4, so x quads can be read as vec4
    uint up_delta;    // GLU: bytes from a gate row to the same up row
    uint norm_base;   // NORM_IN: index of norm_w[0] in its binding (a multiple of 4 when x_vec4)
    float norm_eps;   // NORM_IN: the norm's epsilon
    uint xq_sum_base; // XQ: word index of x's quant sums in the x binding
    // Stacked matrices (Q, K and V in one dispatch; not with GLU): rows from stack_row1 on are a
    // second matrix's, whose row 0 is at byte stack_base1 of the weight binding, and rows from
    // stack_row2 on a third's at stack_base2 (0: no such matrix). y holds every row in order.
    uint stack_row1;
    uint stack_base1;
    uint stack_row2;
    uint stack_base2;
} pc;

// Byte address of weight row `row` (of the stacked matrices' rows) in the weight binding.
uint weight_row_address(uint row) {
    if (pc.stack_row2 != 0u && row >= pc.stack_row2) return pc.stack_base2 + (row - pc.stack_row2) * pc.row_bytes;
    if (pc.stack_row1 != 0u && row >= pc.stack_row1) return pc.stack_base1 + (row - pc.stack_row1) * pc.row_bytes;
    return pc.w_base + row * pc.row_bytes;
}

shared float partial[NACC * WG];  // [NACC][WG]

uint row_addr[NACC];
float acc[NACC];

// Row r's output from the sums s[NACC] (GLU: its gate and up sums), before accumulate.
#ifdef GLU
#define ROW_OUT(s, r) (glu_act(s[r]) * s[ROWS + (r)])
#else
#define ROW_OUT(s, r) (s[r])
#endif
void store_row(uint r, float v) {
    const uint yi = pc.y_base + r;
    y[yi] = pc.accumulate != 0u ? y[yi] + v : v;
}

float x_inv = 1.0;  // NORM_IN: 1 / rms(x), set by main before the first x_quad

#ifdef XQ
#define XQ_QUANTS pc.x_base
#define XQ_SCALES pc.norm_base
#define XQ_SUMS pc.xq_sum_base
#include "matvec_xq.glsl"
#endif

vec4 x_quad(uint e) {
#ifdef XQ
    return xq_quad(e);
#else
    const uint i = pc.x_base + e;
    const vec4 v = pc.x_vec4 != 0u ? x4[i >> 2] : vec4(x[i], x[i + 1u], x[i + 2u], x[i + 3u]);
    if (NORM_IN == 0u) return v;
    const uint j = pc.norm_base + e;
    const vec4 w = pc.x_vec4 != 0u ? norm_w4[j >> 2] : vec4(norm_w[j], norm_w[j + 1u], norm_w[j + 2u], norm_w[j + 3u]);
    return (v * x_inv) * w;
#endif
}

// x[e] as the matvec reads it (normalised with NORM_IN, not rounded).
float x_elem(uint e) {
    const float v = x[pc.x_base + e];
    return NORM_IN == 0u ? v : (v * x_inv) * norm_w[pc.norm_base + e];
}

// NORM_IN: 1 / sqrt(mean(x^2) + eps) over the n_in values of x, summed per thread with stride WG
// and then over the workgroup in norm.comp's order (bit-equal to it for the same WG). All
// invocations call this in uniform control flow; it leaves `partial` free for the final combine.
float rms_inverse(uint tid) {
    float s2 = 0.0;
    for (uint i = tid; i < pc.n_in; i += WG) {
        const float v = x[pc.x_base + i];
        s2 += v * v;
    }
#ifdef USE_SUBGROUP
    s2 = subgroupAdd(s2);
    if (gl_NumSubgroups > 1u) {  // uniform
        if (subgroupElect()) partial[gl_SubgroupID] = s2;
        barrier();
        s2 = partial[0];
        for (uint i = 1u; i < gl_NumSubgroups; ++i) s2 += partial[i];
        barrier();  // every invocation has read partial before anyone writes it again
    }
#else
    partial[tid] = s2;
    barrier();
    for (uint stride = WG / 2u; stride > 0u; stride >>= 1) {
        if (tid < stride) partial[tid] += partial[tid + stride];
        barrier();
    }
    s2 = partial[0];
    barrier();
#endif
    return div_rn(1.0, sqrt_rn(div_rn(s2, float(pc.n_in)) + pc.norm_eps));
}

#include "matvec_unit.glsl"

#if defined(WTYPE_F16) || defined(WTYPE_BF16)
// Rows of 16-bit floats whose every row starts on a 16-byte boundary (the binding's start, the
// row stride and the gate-to-up distance all multiples of 16; x at any alignment): a thread
// reads 8 elements of each row with one 16-byte load, and consecutive threads read consecutive
// 16 bytes, so a subgroup's load is one contiguous run; the 32-element units read rows 2 bytes
// aligned, 5 loads per 16 bytes, with threads 64 bytes apart.
#define MV_OCTS 1
bool octs_aligned() { return ((pc.w_base | pc.row_bytes | pc.up_delta | pc.stack_base1 | pc.stack_base2) & 15u) == 0u; }
vec4 round_quad(vec4 v) { return vec4(round_elem(v.x), round_elem(v.y), round_elem(v.z), round_elem(v.w)); }
// Adds elements 8 oct .. 8 oct + 7 of every row to acc.
void accumulate_oct(uint oct) {
    vec4 xa = x_quad(8u * oct), xb = x_quad(8u * oct + 4u);
    if (ROUND_X != 0u) {
        xa = round_quad(xa);
        xb = round_quad(xb);
    }
    if (MV_ROLLED != 0u) {
        [[dont_unroll]] for (uint r = 0u; r < NACC; ++r) {
            const uvec4 q = w_quads[(row_addr[r] >> 4) + oct];
            acc[r] += dot(halves4(q.x, q.y), xa) + dot(halves4(q.z, q.w), xb);
        }
    } else {
        [[unroll]] for (uint r = 0u; r < NACC; ++r) {
            const uvec4 q = w_quads[(row_addr[r] >> 4) + oct];
            acc[r] += dot(halves4(q.x, q.y), xa) + dot(halves4(q.z, q.w), xb);
        }
    }
}
#endif

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint row0 = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * ROWS;
    if (row0 >= pc.n_rows) return;  // a padding workgroup of the 2-D grid (uniform)
    if (NORM_IN != 0u) x_inv = rms_inverse(tid);

    // Rows past the end repeat the last row (branch-free); their sums are not written.
    [[unroll]] for (uint r = 0u; r < NACC; ++r) {
        row_addr[r] = weight_row_address(min(row0 + r % ROWS, pc.n_rows - 1u)) + (r < ROWS ? 0u : pc.up_delta);
        acc[r] = 0.0;
    }

#ifdef MV_OCTS
    // 16-bit float rows on 16-byte boundaries: consecutive threads read consecutive 16 bytes
    // (8 elements) of each row, one wide load per row and step (matvec_unit.glsl).
    if (octs_aligned()) {
        const uint n_octs = pc.n_in / 8u;  // whole: 16-byte rows hold a multiple of 8 elements
        uint oct = tid;
        for (; oct + (MV_TRIP - 1u) * WG < n_octs; oct += MV_TRIP * WG) {
            [[unroll]] for (uint k = 0u; k < MV_TRIP; ++k) accumulate_oct(oct + k * WG);
        }
        for (; oct < n_octs; oct += WG) accumulate_oct(oct);
    } else
#endif
    {
        const uint n_units = (pc.n_in / BLOCK_ELEMS) * MV_UNITS;  // float types: whole groups of 32
        uint unit = tid;
        // MV_TRIP units per trip, started together; with 2 the sums are those of a loop over
        // pairs of units, as this kernel always summed.
        for (; unit + (MV_TRIP - 1u) * WG < n_units; unit += MV_TRIP * WG) {
            [[unroll]] for (uint k = 0u; k < MV_TRIP; ++k) accumulate_unit(unit + k * WG);
        }
        for (; unit < n_units; unit += WG) accumulate_unit(unit);
#ifdef W_FLOAT
        // Float rows may end in a partial group of 32.
        for (uint e = (pc.n_in / BLOCK_ELEMS) * BLOCK_ELEMS + tid; e < pc.n_in; e += WG) {
            const float xe = ROUND_X != 0u ? round_elem(x_elem(e)) : x_elem(e);
            [[unroll]] for (uint r = 0u; r < NACC; ++r) acc[r] += w_elem(row_addr[r], e) * xe;
        }
#endif
    }

#ifdef USE_SUBGROUP
    [[unroll]] for (uint r = 0u; r < NACC; ++r) acc[r] = subgroupAdd(acc[r]);
    if (gl_NumSubgroups == 1u) {  // one subgroup per workgroup: no shared memory, no barrier
        if (subgroupElect()) {
            [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
                if (row0 + r < pc.n_rows) store_row(row0 + r, ROW_OUT(acc, r));
            }
        }
        return;
    }
    if (subgroupElect()) {
        [[unroll]] for (uint r = 0u; r < NACC; ++r) partial[r * WG + gl_SubgroupID] = acc[r];
    }
    barrier();
    if (tid < ROWS && row0 + tid < pc.n_rows) {
        float sum[NACC];
        [[unroll]] for (uint r = 0u; r < NACC; ++r) sum[r] = 0.0;
        for (uint i = 0u; i < gl_NumSubgroups; ++i) {
            sum[tid] += partial[tid * WG + i];
#ifdef GLU
            sum[ROWS + tid] += partial[(ROWS + tid) * WG + i];
#endif
        }
        store_row(row0 + tid, ROW_OUT(sum, tid));
    }
#else
    [[unroll]] for (uint r = 0u; r < NACC; ++r) partial[r * WG + tid] = acc[r];
    barrier();
    for (uint stride = WG / 2u; stride > 0u; stride >>= 1) {
        if (tid < stride) {
            [[unroll]] for (uint r = 0u; r < NACC; ++r) partial[r * WG + tid] += partial[r * WG + tid + stride];
        }
        barrier();
    }
    if (tid < ROWS && row0 + tid < pc.n_rows) {
        float sum[NACC];
        [[unroll]] for (uint r = 0u; r < NACC; ++r) sum[r] = partial[r * WG];
        store_row(row0 + tid, ROW_OUT(sum, tid));
    }
#endif
}
