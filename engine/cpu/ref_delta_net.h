// Reference of the gated delta rule (Gated DeltaNet: Qwen3-Next, Qwen3.5; with a decay per key
// dimension, Kimi Linear's KDA), in plain C++: ggml_gated_delta_net's recurrence, one token at
// a time. What ops::gated_delta_net is tested against.
//
// Per value head h (key head kh: core/delta_net.h's DeltaHeadShare), with S the d_k x d_v
// state, q and k the token's key-head vectors (L2-normalised first when asked), v the
// value-head vector:
//   S    = S * exp(g)                  (g: one log-decay per head, or per key row i: KDA)
//   d    = beta * (v - S^T k)          (d_v values)
//   S   += k d^T                       (the delta rule: S[i][j] += k[i] d[j])
//   o    = scale * S^T q
// State layout, ggml's: [n_head_v][d_v][d_k], element [h][j][i] = S[i][j] (a value column of S
// is contiguous). Token-major operands are rows with a stride, in floats.
#pragma once

#include <cstdint>

#include "core/delta_net.h"

namespace vkllm::cpu {

struct DeltaNetRef {
    int64_t n_tokens = 0, n_head_k = 0, n_head_v = 0, d_k = 0, d_v = 0;
    DeltaHeadShare share = DeltaHeadShare::Interleaved;
    float* state = nullptr;    // [n_head_v][d_v][d_k], updated in place
    const float* q = nullptr;  // [n_tokens][n_head_k * d_k]
    int64_t q_stride = 0;
    const float* k = nullptr;  // [n_tokens][n_head_k * d_k]
    int64_t k_stride = 0;
    const float* v = nullptr;  // [n_tokens][n_head_v * d_v]
    int64_t v_stride = 0;
    const float* g = nullptr;  // [n_tokens][n_head_v], or [n_tokens][n_head_v * d_k] when per_key_decay
    int64_t g_stride = 0;
    bool per_key_decay = false;
    const float* beta = nullptr;  // [n_tokens][n_head_v], already through the sigmoid
    int64_t beta_stride = 0;
    float* out = nullptr;  // [n_tokens][n_head_v * d_v]
    int64_t out_stride = 0;
    float scale = 0.0f;  // 0: 1 / sqrt(d_k)
    // q and k L2-normalised as llama.cpp's build_gdn_l2_norm: rms_norm(x, eps / n) / sqrt(n).
    bool l2_norm_qk = false;
    float l2_eps = 1e-6f;
};
void gated_delta_net(const DeltaNetRef& a);

// The gates from the projections, llama.cpp's graph (ggml_softplus, ggml_mul, ggml_sigmoid):
// g[t][h] = softplus(alpha[t][col(h)] + dt_bias[h]) * a[h], beta[t][h] = sigmoid(b[t][col(h)]),
// col(h) = (h / hpg) * group_stride + h % hpg (hpg = n_head, group_stride = 0: col(h) = h).
void delta_net_gates(const float* alpha, int64_t alpha_stride, const float* b, int64_t b_stride, const float* dt_bias,
                     const float* a, float* g, int64_t g_stride, float* beta, int64_t beta_stride, int64_t n_tokens,
                     int64_t n_head, int64_t hpg, int64_t group_stride);

// x / sqrt(sum x^2 + eps) in llama.cpp's form: rms_norm with eps / n (the mean of squares summed in
// double, as ggml's), then times 1 / sqrt(n). y may be x.
void delta_net_l2_norm(const float* x, float* y, int64_t n, float eps);

}  // namespace vkllm::cpu
