#version 450
// The gated delta rule (delta_net.comp's math) in chunks of L tokens, for prompts. One workgroup
// per value head and block of WG value columns; invocation j owns state column s = S[:, j] (D_K
// values in registers). The chunks run in order, the tokens of a chunk at once. Per token t,
// with k, q the token's key-head vectors (times their L2 norm factors with flags bit 1) and
// w_t = exp(g_t) the decay of each key row (one value per head, or per row with flags bit 0):
//   s_t = w_t * s_{t-1} + e_t k_t,  e_t = beta_t (v_t[j] - k_t . (w_t * s_{t-1})),
//   o_t = scale q_t . s_t.
// With G_t = w_1 * .. * w_t per key row from the chunk's start (G_0 = 1) and x_t = s_t / G_t the
// step is an addition, x_t = x_{t-1} + e_t k_t / G_t, so with s_0 the state before the chunk,
//   k_t . (w_t * s_{t-1}) = s_0 . k~_t + sum_{u<t} e_u (k^_u . k~_t)
//   o_t / scale          = s_0 . q~_t + sum_{u<=t} e_u (k^_u . q~_t)
//   s_L                   = G_L * (s_0 + sum_u e_u k^_u)
// where k~_t = k_t G_t, q~_t = q_t G_t and k^_u = k_u / G_u (rwkv_wkv7_chunked.comp's WY form
// with a = w k, b = -beta k and beta k for its key). The two L x L token products are the same
// for every column and computed in parallel; each column then finds its e_t by forward
// substitution and forms its outputs and new state. Every product pairs a later token's G with an
// earlier one's 1 / G, a decay <= 1 for g <= 0; G is exp of the running sum of g, kept within
// e^+-kMaxLogDecay so that neither factor overflows. A chunk whose decays reach past that runs
// token by token as delta_net.comp does, so any decay is exact. Heads as delta_net.comp's (value
// head h reads key head h / (n_head_v / n_head_k), or h % n_head_k with flags bit 2); the state
// [n_head_v][d_v][D_K] is read at the start and written back at the end. o may be v itself.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint D_K = 128;
layout(constant_id = 2) const uint L = 16;  // tokens per chunk

layout(std430, binding = 0) buffer State { float st[]; };
layout(std430, binding = 1) readonly buffer Q { float q[]; };
layout(std430, binding = 2) readonly buffer K { float k[]; };
layout(std430, binding = 3) readonly buffer V { float v[]; };
layout(std430, binding = 4) readonly buffer G { float g[]; };
layout(std430, binding = 5) readonly buffer Beta { float beta[]; };
layout(std430, binding = 6) writeonly buffer O { float o[]; };

layout(push_constant) uniform Push {
    uint n_tokens;
    uint n_head_k;
    uint n_head_v;
    uint d_v;
    uint st_shift;   // element offsets inside the bound windows
    uint q_shift;
    uint q_stride;   // floats between token rows
    uint k_shift;
    uint k_stride;
    uint v_shift;
    uint v_stride;
    uint g_shift;
    uint g_stride;
    uint beta_shift;
    uint beta_stride;
    uint o_shift;
    uint o_stride;
    uint flags;      // bit 0: decay per key row, bit 1: L2-normalise q and k, bit 2: tiled head sharing
    float scale;
    float l2_eps;
} pc;

const float kMaxLogDecay = 60.0;  // e^60 ~ 1e26: products of two such factors stay finite

// The chunk's operands [t][i] (zero past the last token), then its token products [u][t].
shared float sh_q[L * D_K];   // q~_t (the raw q_t while the norms are taken)
shared float sh_k[L * D_K];   // k~_t (the raw k_t while the norms are taken)
shared float sh_kh[L * D_K];  // k^_t
shared float sh_kk[L * L];    // k^_u . k~_t for u < t, else 0
shared float sh_kq[L * L];    // k^_u . q~_t for u <= t, else 0
shared float sh_gl[D_K];      // G_L, the chunk's whole decay per key row
shared float sh_qn[L];        // the norm factors of q_t and k_t (1 without flags bit 1)
shared float sh_kn[L];
shared float sh_beta[L];      // beta_t, 0 past the last token
shared uint sh_steps[WG];     // 1 where a key row's decay leaves the safe range

void main() {
    const uint h = gl_WorkGroupID.y;
    const uint i = gl_LocalInvocationID.x;
    const uint j = gl_WorkGroupID.x * WG + i;  // this invocation's value column
    const bool owner = j < pc.d_v;
    const uint col = h * pc.d_v + j;
    const uint rep = pc.n_head_v / pc.n_head_k;
    const uint kh = (pc.flags & 4u) != 0u ? h % pc.n_head_k : h / rep;
    const bool per_key = (pc.flags & 1u) != 0u, l2 = (pc.flags & 2u) != 0u;
    const float l2_eps_n = pc.l2_eps / float(D_K), inv_sqrt_n = 1.0 / sqrt(float(D_K));

    float s[D_K];
    const uint sb = pc.st_shift + col * D_K;
    for (uint r = 0; r < D_K; ++r) s[r] = owner ? st[sb + r] : 0.0;

    for (uint t0 = 0; t0 < pc.n_tokens; t0 += L) {
        const uint len = min(L, pc.n_tokens - t0);
        // Stage the raw q and k of the chunk's tokens, and beta.
        for (uint e = i; e < L * D_K; e += WG) {
            const uint t = e / D_K, r = e - t * D_K;
            const bool live = t < len;
            sh_q[e] = live ? q[pc.q_shift + (t0 + t) * pc.q_stride + kh * D_K + r] : 0.0;
            sh_k[e] = live ? k[pc.k_shift + (t0 + t) * pc.k_stride + kh * D_K + r] : 0.0;
        }
        for (uint t = i; t < L; t += WG) sh_beta[t] = t < len ? beta[pc.beta_shift + (t0 + t) * pc.beta_stride + h] : 0.0;
        barrier();
        // The norm factors (as delta_net.comp's): x_hat = x / sqrt(mean(x^2) + eps / n) / sqrt(n).
        for (uint e = i; e < 2u * L; e += WG) {
            const uint t = e % L;
            const bool is_k = e >= L;
            float ss = 0.0;
            for (uint r = 0; r < D_K; ++r) {
                const float x = is_k ? sh_k[t * D_K + r] : sh_q[t * D_K + r];
                ss = fma(x, x, ss);
            }
            const float f = l2 ? inv_sqrt_n / sqrt(ss / float(D_K) + l2_eps_n) : 1.0;
            if (is_k) sh_kn[t] = f; else sh_qn[t] = f;
        }
        barrier();
        // Key row r: its running log decay over the chunk, and the scaled operands.
        bool unsafe = false;
        for (uint r = i; r < D_K; r += WG) {
            float lg = 0.0;
            for (uint t = 0; t < L; ++t) {
                const uint e = t * D_K + r;
                if (t < len) {
                    lg += g[pc.g_shift + (t0 + t) * pc.g_stride + (per_key ? h * D_K + r : h)];
                    unsafe = unsafe || !(abs(lg) <= kMaxLogDecay);  // also catches -inf and NaN
                }
                const float up = exp(lg), down = exp(-lg);
                const float kt = sh_k[e] * sh_kn[t];
                sh_q[e] = sh_q[e] * sh_qn[t] * up;
                sh_k[e] = kt * up;
                sh_kh[e] = kt * down;
            }
            sh_gl[r] = exp(lg);
        }
        sh_steps[i] = unsafe ? 1u : 0u;
        barrier();
        bool steps = false;
        for (uint w = 0; w < WG; ++w) steps = steps || sh_steps[w] != 0u;

        float vv[L];
        for (uint t = 0; t < L; ++t)
            vv[t] = owner && t < len ? v[pc.v_shift + (t0 + t) * pc.v_stride + col] : 0.0;

        if (steps) {
            // Token by token (delta_net.comp): row 0 of sh_q, sh_k and sh_kh holds the token's
            // normalised q, k and its decays.
            for (uint t = 0; t < len; ++t) {
                const uint tt = t0 + t;
                for (uint r = i; r < D_K; r += WG) {
                    sh_q[r] = q[pc.q_shift + tt * pc.q_stride + kh * D_K + r] * sh_qn[t];
                    sh_k[r] = k[pc.k_shift + tt * pc.k_stride + kh * D_K + r] * sh_kn[t];
                    sh_kh[r] = exp(g[pc.g_shift + tt * pc.g_stride + (per_key ? h * D_K + r : h)]);
                }
                barrier();
                float sk = 0.0;
                for (uint r = 0; r < D_K; ++r) {
                    s[r] *= sh_kh[r];
                    sk = fma(s[r], sh_k[r], sk);
                }
                const float d = (vv[t] - sk) * sh_beta[t];
                float sq = 0.0;
                for (uint r = 0; r < D_K; ++r) {
                    s[r] = fma(sh_k[r], d, s[r]);
                    sq = fma(s[r], sh_q[r], sq);
                }
                if (owner) o[pc.o_shift + tt * pc.o_stride + col] = sq * pc.scale;
                barrier();
            }
        } else {
            // The token products, spread over the workgroup: entry e is (u, t) = (e / L, e % L).
            for (uint e = i; e < L * L; e += WG) {
                const uint u = e / L, t = e - u * L;
                float kk = 0.0, kq = 0.0;
                if (u <= t) {
                    for (uint r = 0; r < D_K; ++r) {
                        const float kh_r = sh_kh[u * D_K + r];
                        kk = fma(kh_r, sh_k[t * D_K + r], kk);
                        kq = fma(kh_r, sh_q[t * D_K + r], kq);
                    }
                }
                sh_kk[e] = u < t ? kk : 0.0;
                sh_kq[e] = kq;
            }
            barrier();
            // Column j: e_t by forward substitution, then the outputs, then the state after the chunk.
            float dl[L];
            for (uint t = 0; t < L; ++t) {
                float z = 0.0;
                for (uint r = 0; r < D_K; ++r) z = fma(s[r], sh_k[t * D_K + r], z);
                for (uint u = 0; u < t; ++u) z = fma(dl[u], sh_kk[u * L + t], z);
                dl[t] = (vv[t] - z) * sh_beta[t];
            }
            for (uint t = 0; t < len; ++t) {
                float y = 0.0;
                for (uint r = 0; r < D_K; ++r) y = fma(s[r], sh_q[t * D_K + r], y);
                for (uint u = 0; u <= t; ++u) y = fma(dl[u], sh_kq[u * L + t], y);
                if (owner) o[pc.o_shift + (t0 + t) * pc.o_stride + col] = y * pc.scale;
            }
            for (uint r = 0; r < D_K; ++r) {
                float x = s[r];
                for (uint u = 0; u < L; ++u) x = fma(dl[u], sh_kh[u * D_K + r], x);
                s[r] = x * sh_gl[r];
            }
        }
        barrier();  // the next chunk's staging overwrites what this one read
    }
    if (owner)
        for (uint r = 0; r < D_K; ++r) st[sb + r] = s[r];
}
