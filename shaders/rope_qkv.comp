#version 450
#ifdef OUT_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
// Decode's q, k and v after their projections, in one dispatch instead of three: q rotated in
// place (rope.comp), k rotated into its cache slots with the dims past n_dims copied
// (rope.comp into slots), v copied into its cache slots (set_rows.comp): the same operations, so
// the same values. Slot = pos[t] % slots. Invocations stride over q's pairs, then k's pairs, k's
// unrotated dims and v's values.
#include "common.glsl"
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer Q { float q[]; };                      // [n_tokens, n_heads_q * head_dim]
layout(std430, binding = 1) readonly buffer Pos { int pos[]; };
layout(std430, binding = 2) readonly buffer FreqFactors { float freq_factors[]; };
layout(std430, binding = 3) readonly buffer K { float k[]; };             // [n_tokens, n_heads_kv * head_dim]
layout(std430, binding = 4) readonly buffer V { float v[]; };             // [n_tokens, v_row]
#ifdef OUT_F16  // fp16 caches (16-bit storage): values rounded to nearest even, NaN kept
#include "fp16.glsl"
#define OUT_T(x) float16_t(isnan(x) ? (x) : round_to_fp16(x))
layout(std430, binding = 5) writeonly buffer KC { float16_t kc[]; };      // [slots, n_heads_kv * head_dim]
layout(std430, binding = 6) writeonly buffer VC { float16_t vc[]; };      // [slots, v_row]
#else
#define OUT_T(x) (x)
layout(std430, binding = 5) writeonly buffer KC { float kc[]; };
layout(std430, binding = 6) writeonly buffer VC { float vc[]; };
#endif

layout(push_constant) uniform Push {
    uint n_tokens;
    uint n_heads_q;
    uint n_heads_kv;
    uint head_dim;
    uint n_pairs;     // n_dims / 2
    uint v_row;       // v values per token
    uint slots;
    uint q_shift;     // element offsets inside the bound windows
    uint pos_shift;
    uint ff_shift;
    uint k_shift;
    uint v_shift;
    uint kc_shift;
    uint vc_shift;
    uint flags;       // bit 0: NeoX pairing, bit 1: freq_factors, bit 2: YaRN
    float log2_base;
    float freq_scale;
    float ext_factor;
    float mscale;
    float corr_low;
    float corr_high;
} pc;

#include "rope_angle.glsl"

uint slot_of(uint token) { return uint(pos[pc.pos_shift + token]) % pc.slots; }

void main() {
    const uint threads = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    const bool neox = (pc.flags & 1u) != 0u;
    const uint rest = pc.head_dim - 2u * pc.n_pairs;
    const uint q_pairs = pc.n_tokens * pc.n_heads_q * pc.n_pairs;
    const uint k_pairs = pc.n_tokens * pc.n_heads_kv * pc.n_pairs;
    const uint k_rest = pc.n_tokens * pc.n_heads_kv * rest;
    const uint total = q_pairs + k_pairs + k_rest + pc.n_tokens * pc.v_row;
    const uint q_row = pc.n_heads_q * pc.head_dim, k_row = pc.n_heads_kv * pc.head_dim;
    for (uint e = gl_GlobalInvocationID.x; e < total; e += threads) {
        if (e < q_pairs + k_pairs) {
            const bool is_q = e < q_pairs;
            const uint i = is_q ? e : e - q_pairs;
            const uint n_heads = is_q ? pc.n_heads_q : pc.n_heads_kv;
            const uint j = i % pc.n_pairs;
            const uint head = i / pc.n_pairs;  // token * n_heads + h
            const uint token = head / n_heads, h = head - token * n_heads;
            const vec2 cs = rope_cos_sin(pos[pc.pos_shift + token], j);
            const float c = cs.x, s = cs.y;
            const uint i0 = neox ? j : 2u * j;
            const uint i1 = i0 + (neox ? pc.n_pairs : 1u);
            if (is_q) {
                const uint base = pc.q_shift + token * q_row + h * pc.head_dim;
                const float x0 = q[base + i0], x1 = q[base + i1];
                q[base + i0] = x0 * c - x1 * s;
                q[base + i1] = x0 * s + x1 * c;
            } else {
                const uint base = pc.k_shift + token * k_row + h * pc.head_dim;
                const uint out_base = pc.kc_shift + slot_of(token) * k_row + h * pc.head_dim;
                const float x0 = k[base + i0], x1 = k[base + i1];
                const float r0 = x0 * c - x1 * s, r1 = x0 * s + x1 * c;
                kc[out_base + i0] = OUT_T(r0);
                kc[out_base + i1] = OUT_T(r1);
            }
        } else if (e < q_pairs + k_pairs + k_rest) {
            const uint i = e - q_pairs - k_pairs;
            const uint d = 2u * pc.n_pairs + i % rest;
            const uint head = i / rest;
            const uint token = head / pc.n_heads_kv, h = head - token * pc.n_heads_kv;
            kc[pc.kc_shift + slot_of(token) * k_row + h * pc.head_dim + d] =
                OUT_T(k[pc.k_shift + token * k_row + h * pc.head_dim + d]);
        } else {
            const uint i = e - q_pairs - k_pairs - k_rest;
            const uint token = i / pc.v_row, c = i - token * pc.v_row;
            vc[pc.vc_shift + slot_of(token) * pc.v_row + c] = OUT_T(v[pc.v_shift + token * pc.v_row + c]);
        }
    }
}
