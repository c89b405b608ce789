#version 450
#ifdef KV_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
// Scaled dot-product attention (Vaswani et al. 2017) over a KV cache, tiled over the keys with
// an online softmax (Milakov & Gimelshein 2018; FlashAttention, Dao et al. 2022).
//
// A workgroup owns R = BQ * GB "rows": BQ consecutive queries times GB query heads that share
// one kv head (GQA/MQA: the K and V rows it reads serve all of them). It walks its key range in
// tiles of BK keys; per tile:
//   scores  S[r][c] = scale * q_r . k_c (soft-capped, ALiBi), masked by positions -> s_sh
//   stats   m_r' = max(m_r, max_c S[r][c]), alpha_r = exp(m_r - m_r')
//   probs   P[r][c] = exp(S[r][c] - m_r')                                       -> s_sh
//   output  O_r = alpha_r O_r + sum_c P[r][c] v_c,  l_r = alpha_r l_r + sum_c P[r][c]
// and ends with out_r = O_r / l_r (attention sinks join l). With SPLIT (flag 8) each workgroup
// covers one range of keys (gl_WorkGroupID.x) and writes O_r, m_r, l_r unnormalised for
// attention_combine.comp to merge. With PROBS (flag 4) a first pass finds each row's max and
// sum, so the second pass produces exact probabilities, written out and used for O directly.
//
// Masks are computed from positions: a key slot with a negative position is empty; causal hides
// keys after the query; window W hides keys at positions <= q_pos - W; chunk C hides keys in
// another chunk (pos / C). Masked keys are never read.
//
// ALiBi (Press et al. 2022): with ALIBI_MAX_BIAS > 0 each visible score gets
// -slope_h * |q_pos - k_pos| after the soft-cap, slope_h as core/attention.h's alibi_slope. It is a
// specialization constant (one value per model), so models without it compile no ALiBi code.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint D = 64;    // head_dim of q and k
layout(constant_id = 2) const uint DV = 64;   // head_dim of v and out
layout(constant_id = 3) const uint GB = 1;    // query heads per workgroup
layout(constant_id = 4) const uint BQ = 1;    // queries per workgroup
layout(constant_id = 5) const uint BK = 128;  // keys per tile; divides WG
layout(constant_id = 6) const uint TD = 64;   // invocations along DV in the output phase; divides WG
layout(constant_id = 7) const float ALIBI_MAX_BIAS = 0.0;  // > 0: ALiBi with this max bias

const uint R = BQ * GB;                 // rows per workgroup, row r = query r / GB, head r % GB
const uint NRG = WG / BK;               // score phase: invocation t owns key t % BK, rows t / BK + k NRG
const uint RPT = (R + NRG - 1) / NRG;
const uint TR = WG / TD;                // output phase: invocation t owns dims t % TD + n TD, rows t / TD + k TR
const uint NR = (R + TR - 1) / TR;
const uint ND = (DV + TD - 1) / TD;
const uint D_VEC4 = (D + 3) / 4;           // query rows in shared memory are padded to whole vec4s
const uint BK4 = BK / 4;                // BK is a multiple of 4
const bool K_VEC4 = (D % 4) == 0;

layout(std430, binding = 0) readonly buffer Q { float q[]; };          // [n_q, n_head, D]
layout(std430, binding = 1) readonly buffer QPos { int q_pos[]; };     // [n_q]
// The cache's element type: fp32; fp16 with KV_F16 (16-bit storage only; math stays fp32); or
// with KV_Q8_0 blocks of 32 values in 9 words (the scale as an f32 word, then 32 int8 quants:
// shaders/set_rows.comp). k_elem/k_quad/v_elem read element i / quad q of the flat cache.
#if defined(KV_F16)
layout(std430, binding = 2) readonly buffer K { float16_t k[]; };      // [n_kv, n_head_kv, D]
layout(std430, binding = 2) readonly buffer K4 { f16vec4 k4[]; };
layout(std430, binding = 3) readonly buffer V { float16_t v[]; };      // [n_kv, n_head_kv, DV]
float k_elem(uint i) { return float(k[i]); }
vec4 k_quad(uint q) { return vec4(k4[q]); }
float v_elem(uint i) { return float(v[i]); }
#elif defined(KV_Q8_0)
layout(std430, binding = 2) readonly buffer K { uint k_words[]; };
layout(std430, binding = 3) readonly buffer V { uint v_words[]; };
// The int8 quant of byte b (0..3) of a word.
float q8_byte(uint w, uint b) { return float(int(w << (24u - 8u * b)) >> 24); }
float k_elem(uint i) {
    const uint blk = (i >> 5) * 9u;
    return uintBitsToFloat(k_words[blk]) * q8_byte(k_words[blk + 1u + ((i & 31u) >> 2)], i & 3u);
}
vec4 k_quad(uint q) {  // elements 4q..4q+3: one word of one block
    const uint blk = (q >> 3) * 9u;
    const int w = int(k_words[blk + 1u + (q & 7u)]);
    return uintBitsToFloat(k_words[blk]) * vec4(ivec4(w << 24, w << 16, w << 8, w) >> 24);
}
float v_elem(uint i) {
    const uint blk = (i >> 5) * 9u;
    return uintBitsToFloat(v_words[blk]) * q8_byte(v_words[blk + 1u + ((i & 31u) >> 2)], i & 3u);
}
#else
layout(std430, binding = 2) readonly buffer K { float k[]; };          // [n_kv, n_head_kv, D]
layout(std430, binding = 2) readonly buffer K4 { vec4 k4[]; };
layout(std430, binding = 3) readonly buffer V { float v[]; };          // [n_kv, n_head_kv, DV]
float k_elem(uint i) { return k[i]; }
vec4 k_quad(uint q) { return k4[q]; }
float v_elem(uint i) { return v[i]; }
#endif
layout(std430, binding = 4) readonly buffer KVPos { int kv_pos[]; };   // [n_kv]
// [n_q, n_head, DV]; with SPLIT the partials: O [n_q * n_head, n_splits, DV], then (m, l) pairs
layout(std430, binding = 5) writeonly buffer Out { float o[]; };
layout(std430, binding = 6) readonly buffer Sinks { float sinks[]; };  // [n_head]
layout(std430, binding = 7) writeonly buffer Probs { float probs[]; }; // [n_q, n_head, n_kv] (+ sinks [n_q, n_head])

layout(push_constant) uniform Push {
    uint n_q;
    uint n_kv;
    uint n_head;
    uint n_head_kv;
    uint group;           // n_head / n_head_kv
    uint head_blocks;     // workgroups per kv head: ceil(group / GB)
    uint q_shift;         // element offset of q inside its bound window
    uint keys_per_split;  // a multiple of BK
    uint n_splits;
    uint flags;           // 1 causal, 2 sinks, 4 probs, 8 split
    int window;
    int chunk;
    float scale;
    float softcap;
} pc;

const float NEG = -3.0e38;  // the score of a masked key; no real score comes near it

shared vec4 q_sh[R * D_VEC4];   // scaled queries [R][D_VEC4], zero-padded
shared vec4 s_sh[R * BK4];  // scores, then probabilities, of the current tile [R][BK]
shared float m_sh[R];       // running max per row
shared float l_sh[R];       // sum of exp(score - max) per row (PROBS pass 1)
shared float alpha_sh[R];   // rescale of the running output for this tile
shared int qpos_sh[R];      // the row's query position; -1: the row does not exist
shared float slope_sh[R];   // the row's head's ALiBi slope (0 without ALiBi)
shared uint vis_sh[2];      // "some score in the tile is visible", double-buffered by tile parity

bool visible(int qp, int kp) {
    if (qp < 0 || kp < 0) return false;
    if ((pc.flags & 1u) != 0u && kp > qp) return false;
    if (pc.window > 0 && kp <= qp - pc.window) return false;
    if (pc.chunk > 0 && kp / pc.chunk != qp / pc.chunk) return false;
    return true;
}

// ALiBi's slope of query head h (core/attention.h: AttentionParams::alibi_slope): with n the
// largest power of two <= n_head and b the max bias, 2^(-b (h + 1) / n) for the first n heads,
// 2^(-b (2 (h - n) + 1) / (2 n)) for the rest.
float alibi_slope(uint h) {
    const float n = float(1u << findMSB(pc.n_head));
    return float(h) < n ? exp2(-ALIBI_MAX_BIAS * float(h + 1u) / n)
                        : exp2(-ALIBI_MAX_BIAS * (2.0 * (float(h) - n) + 1.0) / (2.0 * n));
}

// Scores of this invocation's key (tile start kt) against its rows; true if any is visible.
bool tile_scores(uint kt, uint k_end, uint hk, out float sv[RPT]) {
    const uint t = gl_LocalInvocationID.x;
    const uint j = kt + t % BK, rg = t / BK;
    const int kp = j < k_end ? kv_pos[j] : -1;
    bool vis[RPT];
    bool any = false;
    [[unroll]] for (uint a = 0; a < RPT; ++a) {
        const uint r = rg + a * NRG;
        vis[a] = r < R && visible(qpos_sh[min(r, R - 1)], kp);
        any = any || vis[a];
        sv[a] = 0.0;
    }
    if (any) {
        const uint kbase = (j * pc.n_head_kv + hk) * D;
        if (K_VEC4) {
            for (uint dv4 = 0; dv4 < D_VEC4; ++dv4) {
                const vec4 kv = k_quad(kbase / 4 + dv4);
                [[unroll]] for (uint a = 0; a < RPT; ++a) sv[a] += dot(q_sh[min(rg + a * NRG, R - 1) * D_VEC4 + dv4], kv);
            }
        } else {
            for (uint d = 0; d < D; ++d) {
                const float kd = k_elem(kbase + d);
                [[unroll]] for (uint a = 0; a < RPT; ++a) sv[a] += q_sh[min(rg + a * NRG, R - 1) * D_VEC4 + d / 4][d % 4] * kd;
            }
        }
    }
    [[unroll]] for (uint a = 0; a < RPT; ++a) {
        float s = sv[a];
        // softcap * tanh(s / softcap) (Gemma 2); the clamp keeps tanh's exp form finite.
        if (pc.softcap > 0.0) s = pc.softcap * tanh(clamp(s / pc.softcap, -15.0, 15.0));
        if (ALIBI_MAX_BIAS > 0.0) {
            const uint r = min(rg + a * NRG, R - 1);
            s -= slope_sh[r] * abs(float(qpos_sh[r]) - float(kp));
        }
        sv[a] = vis[a] ? s : NEG;
    }
    return any;
}

void store_scores(const float sv[RPT]) {
    const uint t = gl_LocalInvocationID.x;
    [[unroll]] for (uint a = 0; a < RPT; ++a) {
        const uint r = t / BK + a * NRG;
        if (r < R) s_sh[r * BK4 + (t % BK) / 4][t % 4] = sv[a];
    }
}

void main() {
    const uint t = gl_LocalInvocationID.x;
    const uint split = gl_WorkGroupID.x;
    const uint hk = gl_WorkGroupID.y / pc.head_blocks;                 // kv head
    const uint head0 = (gl_WorkGroupID.y % pc.head_blocks) * GB;      // first head of the block within the group
    const uint q0 = gl_WorkGroupID.z * BQ;                            // first query
    const bool split_mode = (pc.flags & 8u) != 0u, probs_mode = (pc.flags & 4u) != 0u;
    const uint k_begin = split * pc.keys_per_split;
    const uint k_end = min(pc.n_kv, k_begin + pc.keys_per_split);

    // Row r's query index and head (row_ok: it exists).
    #define ROW_Q(r) (q0 + (r) / GB)
    #define ROW_HEAD(r) (hk * pc.group + head0 + (r) % GB)
    #define ROW_OK(r) ((r) < R && ROW_Q(r) < pc.n_q && head0 + (r) % GB < pc.group)

    for (uint i = t; i < R * D_VEC4 * 4; i += WG) {
        const uint r = i / (D_VEC4 * 4), d = i % (D_VEC4 * 4);
        const bool ok = ROW_OK(r) && d < D;
        q_sh[i / 4][i % 4] = ok ? q[pc.q_shift + (ROW_Q(r) * pc.n_head + ROW_HEAD(r)) * D + d] * pc.scale : 0.0;
    }
    for (uint r = t; r < R; r += WG) {
        qpos_sh[r] = ROW_OK(r) ? q_pos[ROW_Q(r)] : -1;
        slope_sh[r] = ALIBI_MAX_BIAS > 0.0 && ROW_OK(r) ? alibi_slope(ROW_HEAD(r)) : 0.0;
        m_sh[r] = NEG;
        l_sh[r] = 0.0;
        alpha_sh[r] = 1.0;
    }
    if (t < 2) vis_sh[t] = 0u;
    barrier();

    if (probs_mode) {
        // Pass 1: each row's max and sum of exponentials over all keys.
        for (uint kt = k_begin; kt < k_end; kt += BK) {
            float sv[RPT];
            tile_scores(kt, k_end, hk, sv);
            store_scores(sv);
            barrier();
            if (t < R) {
                float mx = m_sh[t];
                for (uint c = 0; c < BK4; ++c) {
                    const vec4 s4 = s_sh[t * BK4 + c];
                    mx = max(mx, max(max(s4.x, s4.y), max(s4.z, s4.w)));
                }
                float l = l_sh[t] * exp(m_sh[t] - mx);
                for (uint c = 0; c < BK4; ++c) {
                    const vec4 s4 = s_sh[t * BK4 + c];
                    [[unroll]] for (uint u = 0; u < 4; ++u)
                        if (s4[u] != NEG) l += exp(s4[u] - mx);
                }
                m_sh[t] = mx;
                l_sh[t] = l;
            }
            barrier();
        }
        // Fold the sink into the final max and denominator.
        if (t < R) {
            float mx = m_sh[t], l = l_sh[t];
            if ((pc.flags & 2u) != 0u && ROW_OK(t)) {
                const float sink = sinks[ROW_HEAD(t)];
                const float m_new = max(mx, sink);
                l = l * exp(mx - m_new) + exp(sink - m_new);
                mx = m_new;
                // The sink's own probability, after the rows: probs[n_q * n_head * n_kv + row].
                probs[pc.n_q * pc.n_head * pc.n_kv + ROW_Q(t) * pc.n_head + ROW_HEAD(t)] = exp(sink - mx) / l;
            }
            m_sh[t] = mx;
            l_sh[t] = l;
        }
        barrier();
    }

    float acc[NR * ND];  // this invocation's outputs: rows t / TD + a TR, dims t % TD + n TD
    float lsum[NR];      // running sum of probabilities of those rows
    [[unroll]] for (uint a = 0; a < NR * ND; ++a) acc[a] = 0.0;
    [[unroll]] for (uint a = 0; a < NR; ++a) lsum[a] = 0.0;
    const uint td = t % TD, tr = t / TD;

    uint parity = 0;
    for (uint kt = k_begin; kt < k_end; kt += BK) {
        float sv[RPT];
        const bool any = tile_scores(kt, k_end, hk, sv);
        if (probs_mode) {
            // Exact probabilities from pass 1's statistics.
            const uint j = kt + t % BK;
            [[unroll]] for (uint a = 0; a < RPT; ++a) {
                const uint r = t / BK + a * NRG;
                if (r >= R) continue;
                const float l = l_sh[r];
                const float p = (sv[a] == NEG || l == 0.0) ? 0.0 : exp(sv[a] - m_sh[r]) / l;
                sv[a] = p;
                if (ROW_OK(r) && j < k_end) probs[(ROW_Q(r) * pc.n_head + ROW_HEAD(r)) * pc.n_kv + j] = p;
            }
        } else if (any) {
            vis_sh[parity] = 1u;
        }
        store_scores(sv);
        barrier();

        if (!probs_mode) {
            const bool tile_visible = vis_sh[parity] != 0u;
            if (t == 0) vis_sh[parity ^ 1u] = 0u;  // its readers finished before this tile's barrier
            if (!tile_visible) {                   // uniform: every invocation read the same flag
                barrier();                         // orders the reset above before the next tile sets it
                parity ^= 1u;
                continue;
            }
            if (t < R) {
                float mx = NEG;
                for (uint c = 0; c < BK4; ++c) {
                    const vec4 s4 = s_sh[t * BK4 + c];
                    mx = max(mx, max(max(s4.x, s4.y), max(s4.z, s4.w)));
                }
                const float m_new = max(m_sh[t], mx);
                alpha_sh[t] = exp(m_sh[t] - m_new);
                m_sh[t] = m_new;
            }
            barrier();
            [[unroll]] for (uint a = 0; a < RPT; ++a) {
                const uint r = t / BK + a * NRG;
                if (r < R) s_sh[r * BK4 + (t % BK) / 4][t % 4] = sv[a] == NEG ? 0.0 : exp(sv[a] - m_sh[r]);
            }
            barrier();
            [[unroll]] for (uint a = 0; a < NR; ++a) {
                const float alpha = alpha_sh[min(tr + a * TR, R - 1)];
                lsum[a] *= alpha;
                [[unroll]] for (uint n = 0; n < ND; ++n) acc[a * ND + n] *= alpha;
            }
        }

        // Four keys at a time: one vec4 of probabilities per row. Keys past the range and empty
        // slots (which may hold anything, NaN included) read as zero values; their probability is 0.
        const uint n_keys = min(BK, k_end - kt);
        for (uint c4 = 0; c4 < (n_keys + 3) / 4; ++c4) {
            float vd[4 * ND];
            [[unroll]] for (uint u = 0; u < 4; ++u) {
                const uint j = min(kt + 4 * c4 + u, pc.n_kv - 1);  // in bounds even if loaded speculatively
                const bool ok = 4 * c4 + u < n_keys && kv_pos[j] >= 0;
                const uint vbase = (j * pc.n_head_kv + hk) * DV;
                [[unroll]] for (uint n = 0; n < ND; ++n) {
                    const uint d = td + n * TD;
                    vd[u * ND + n] = ok && d < DV ? v_elem(vbase + d) : 0.0;
                }
            }
            [[unroll]] for (uint a = 0; a < NR; ++a) {
                const vec4 p4 = s_sh[min(tr + a * TR, R - 1) * BK4 + c4];
                lsum[a] += (p4.x + p4.y) + (p4.z + p4.w);
                [[unroll]] for (uint n = 0; n < ND; ++n)
                    acc[a * ND + n] += p4.x * vd[n] + p4.y * vd[ND + n] + p4.z * vd[2 * ND + n] + p4.w * vd[3 * ND + n];
            }
        }
        barrier();
        parity ^= 1u;
    }

    // Write this invocation's rows.
    [[unroll]] for (uint a = 0; a < NR; ++a) {
        const uint r = tr + a * TR;
        if (!ROW_OK(r)) continue;
        const uint row = ROW_Q(r) * pc.n_head + ROW_HEAD(r);
        const float m = m_sh[r];
        if (split_mode) {
            const uint part = row * pc.n_splits + split;
            [[unroll]] for (uint n = 0; n < ND; ++n) {
                const uint d = td + n * TD;
                if (d < DV) o[part * DV + d] = acc[a * ND + n];
            }
            if (td == 0) {
                const uint ml = pc.n_q * pc.n_head * pc.n_splits * DV + part * 2;
                o[ml] = m;
                o[ml + 1] = lsum[a];
            }
            continue;
        }
        float factor;  // out = acc * factor
        if (probs_mode) {
            factor = 1.0;  // the probabilities were already normalised
        } else if ((pc.flags & 2u) != 0u) {
            // The sink adds exp(sink - M) to the denominator and nothing to the numerator.
            const float sink = sinks[ROW_HEAD(r)];
            const float m_all = max(m, sink);
            const float l = lsum[a] * exp(m - m_all) + exp(sink - m_all);
            factor = exp(m - m_all) / l;
        } else {
            factor = lsum[a] > 0.0 ? 1.0 / lsum[a] : 0.0;  // no visible key: zeros
        }
        [[unroll]] for (uint n = 0; n < ND; ++n) {
            const uint d = td + n * TD;
            if (d < DV) o[row * DV + d] = acc[a * ND + n] * factor;
        }
    }
}
