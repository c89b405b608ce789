#version 450
// RWKV-7's generalized delta rule (rwkv_wkv7.comp's math) in chunks of L tokens, for prompts.
// One workgroup per head, one invocation per state row i; the chunks run in order, the tokens of
// a chunk in parallel. Per token t the row s = S[i][0..N) follows
//   s_t = s_{t-1} diag(w_t) + (s_{t-1} . a_t) b_t + v_t[i] k_t,      y_t[i] = s_t . r_t.
// With g_t = w_1 * .. * w_t (per channel j, from the chunk's start; g_0 = 1) and x_t = s_t / g_t,
// the step is an addition: x_t = x_{t-1} + z_t b_t / g_t + v_t[i] k_t / g_t, z_t = s_{t-1} . a_t.
// Unrolled over the chunk from the state s_0 before it:
//   z_t = s_0 . a~_t + sum_{u<t}  (z_u  (b^_u . a~_t) + v_u[i] (k^_u . a~_t))
//   y_t = s_0 . r~_t + sum_{u<=t} (z_u  (b^_u . r~_t) + v_u[i] (k^_u . r~_t))
//   s_L = g_L (s_0 + sum_u (z_u b^_u + v_u[i] k^_u))
// with a~_t = a_t g_{t-1}, r~_t = r_t g_t, k^_u = k_u / g_u, b^_u = b_u / g_u. The four L x L
// token products (the same for every row) are computed in parallel; each row then solves its
// lower-triangular system for z by forward substitution and forms its outputs and new state.
// Every product pairs a later token's g with an earlier one's 1 / g, a decay <= 1 for w in (0,1);
// g is exp of the running sum of log w, kept within e^+-kMaxLogDecay so that neither factor
// overflows. A chunk whose decays reach past that (w near 0, or w = 0) runs token by token as
// rwkv_wkv7.comp does, so any w is exact. The state [n_head][N][N] (row i contiguous, ggml's
// layout) is read at the start and written back at the end.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint N = 64;  // head size, the workgroup size
layout(constant_id = 1) const uint L = 16;  // tokens per chunk

layout(std430, binding = 0) buffer State { float st[]; };
layout(std430, binding = 1) readonly buffer R { float r[]; };
layout(std430, binding = 2) readonly buffer W { float w[]; };
layout(std430, binding = 3) readonly buffer K { float k[]; };
layout(std430, binding = 4) readonly buffer V { float v[]; };
layout(std430, binding = 5) readonly buffer A { float a[]; };
layout(std430, binding = 6) readonly buffer B { float b[]; };
layout(std430, binding = 7) writeonly buffer O { float o[]; };

layout(push_constant) uniform Push {
    uint n_tokens;
    uint st_shift;  // element offsets inside the bound windows
    uint r_shift;
    uint r_stride;  // floats between token rows
    uint w_shift;
    uint w_stride;
    uint k_shift;
    uint k_stride;
    uint v_shift;
    uint v_stride;
    uint a_shift;
    uint a_stride;
    uint b_shift;
    uint b_stride;
    uint o_shift;
    uint o_stride;
} pc;

const float kMaxLogDecay = 60.0;  // e^60 ~ 1e26: products of two such factors stay finite

// The chunk's operands, [t][j] (zero past the last token), then its token products [u][t].
shared float sh_r[L * N];      // r~_t = r_t g_t
shared float sh_a[L * N];      // a~_t = a_t g_{t-1}
shared float sh_k[L * N];      // k^_t = k_t / g_t
shared float sh_b[L * N];      // b^_t = b_t / g_t
shared float sh_ba[L * L];     // b^_u . a~_t for u < t, else 0
shared float sh_ka[L * L];     // k^_u . a~_t for u < t, else 0
shared float sh_br[L * L];     // b^_u . r~_t for u <= t, else 0
shared float sh_kr[L * L];     // k^_u . r~_t for u <= t, else 0
shared float sh_g[N];          // g_L, the chunk's whole decay
shared uint sh_steps[N];       // 1 where channel j's decay leaves the safe range

void main() {
    const uint h = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    const uint i = gl_LocalInvocationID.x;
    const uint c = h * N + i;  // this invocation's channel: its state row, and the one it stages

    float s[N];
    const uint sbase = pc.st_shift + c * N;
    for (uint j = 0; j < N; ++j) s[j] = st[sbase + j];

    for (uint t0 = 0; t0 < pc.n_tokens; t0 += L) {
        const uint len = min(L, pc.n_tokens - t0);
        // Stage channel i of every token of the chunk, and this row's values.
        float vv[L];
        float lg = 0.0;  // log g_t of channel i
        bool unsafe = false;
        for (uint t = 0; t < L; ++t) {
            float rt = 0.0, at = 0.0, kt = 0.0, bt = 0.0;
            vv[t] = 0.0;
            if (t < len) {
                const uint tt = t0 + t;
                const float lg_prev = lg;
                lg += log(w[pc.w_shift + tt * pc.w_stride + c]);
                unsafe = unsafe || !(abs(lg) <= kMaxLogDecay);  // also catches -inf and NaN
                rt = r[pc.r_shift + tt * pc.r_stride + c] * exp(lg);
                at = a[pc.a_shift + tt * pc.a_stride + c] * exp(lg_prev);
                kt = k[pc.k_shift + tt * pc.k_stride + c] * exp(-lg);
                bt = b[pc.b_shift + tt * pc.b_stride + c] * exp(-lg);
                vv[t] = v[pc.v_shift + tt * pc.v_stride + c];
            }
            sh_r[t * N + i] = rt;
            sh_a[t * N + i] = at;
            sh_k[t * N + i] = kt;
            sh_b[t * N + i] = bt;
        }
        sh_g[i] = exp(lg);
        sh_steps[i] = unsafe ? 1u : 0u;
        barrier();
        bool steps = false;
        for (uint j = 0; j < N; ++j) steps = steps || sh_steps[j] != 0u;

        if (steps) {
            // Token by token (rwkv_wkv7.comp), the raw operands staged in the first rows.
            for (uint t = 0; t < len; ++t) {
                const uint tt = t0 + t;
                sh_r[i] = r[pc.r_shift + tt * pc.r_stride + c];
                sh_r[N + i] = w[pc.w_shift + tt * pc.w_stride + c];
                sh_k[i] = k[pc.k_shift + tt * pc.k_stride + c];
                sh_a[i] = a[pc.a_shift + tt * pc.a_stride + c];
                sh_b[i] = b[pc.b_shift + tt * pc.b_stride + c];
                barrier();
                float sa = 0.0;
                for (uint j = 0; j < N; ++j) sa += sh_a[j] * s[j];
                float y = 0.0;
                for (uint j = 0; j < N; ++j) {
                    s[j] = s[j] * sh_r[N + j] + vv[t] * sh_k[j] + sa * sh_b[j];
                    y += s[j] * sh_r[j];
                }
                o[pc.o_shift + tt * pc.o_stride + c] = y;
                barrier();
            }
        } else {
            // The token products, spread over the workgroup: entry e is (u, t) = (e / L, e % L).
            for (uint e = i; e < L * L; e += N) {
                const uint u = e / L, t = e % L;
                float ba = 0.0, ka = 0.0, br = 0.0, kr = 0.0;
                if (u <= t) {
                    for (uint j = 0; j < N; ++j) {
                        const float bj = sh_b[u * N + j], kj = sh_k[u * N + j];
                        const float aj = sh_a[t * N + j], rj = sh_r[t * N + j];
                        ba += bj * aj;
                        ka += kj * aj;
                        br += bj * rj;
                        kr += kj * rj;
                    }
                }
                sh_ba[e] = u < t ? ba : 0.0;
                sh_ka[e] = u < t ? ka : 0.0;
                sh_br[e] = br;
                sh_kr[e] = kr;
            }
            barrier();
            // Row i: z by forward substitution, then the outputs, then the state after the chunk.
            float z[L];
            for (uint t = 0; t < L; ++t) {
                float zt = 0.0;
                for (uint j = 0; j < N; ++j) zt += s[j] * sh_a[t * N + j];
                for (uint u = 0; u < t; ++u) zt += z[u] * sh_ba[u * L + t] + vv[u] * sh_ka[u * L + t];
                z[t] = zt;
            }
            for (uint t = 0; t < len; ++t) {
                float y = 0.0;
                for (uint j = 0; j < N; ++j) y += s[j] * sh_r[t * N + j];
                for (uint u = 0; u <= t; ++u) y += z[u] * sh_br[u * L + t] + vv[u] * sh_kr[u * L + t];
                o[pc.o_shift + (t0 + t) * pc.o_stride + c] = y;
            }
            for (uint j = 0; j < N; ++j) {
                float x = s[j];
                for (uint u = 0; u < L; ++u) x += z[u] * sh_b[u * N + j] + vv[u] * sh_k[u * N + j];
                s[j] = x * sh_g[j];
            }
        }
        barrier();  // the next chunk's staging overwrites what this one read
    }
    for (uint j = 0; j < N; ++j) st[sbase + j] = s[j];
}
