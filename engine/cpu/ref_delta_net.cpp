// CPU reference of the gated delta rule (ref_delta_net.h): ggml_compute_forward_gated_delta_net's
// loop, with the state as ggml keeps it ([h][j][i] = S[i][j]).
#include "cpu/ref_delta_net.h"

#include <cmath>
#include <string>
#include <vector>

#include "cpu/ref_ops.h"
#include "cpu/ref_ssm.h"

namespace vkllm::cpu {

namespace {

void require(bool ok, const std::string& message) {
    if (!ok) throw ShapeError("gated_delta_net: " + message);
}

}  // namespace

void delta_net_l2_norm(const float* x, float* y, int64_t n, float eps) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(x[i]) * double(x[i]);
    const float mean = float(sum / double(n));
    const float inv = 1.0f / std::sqrt(mean + eps / float(n));
    const float post = 1.0f / std::sqrt(float(n));
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * inv) * post;
}

void delta_net_gates(const float* alpha, int64_t alpha_stride, const float* b, int64_t b_stride, const float* dt_bias,
                     const float* a, float* g, int64_t g_stride, float* beta, int64_t beta_stride, int64_t n_tokens,
                     int64_t n_head, int64_t hpg, int64_t group_stride) {
    require(n_tokens >= 0 && n_head > 0 && hpg > 0, "delta_net_gates needs n_tokens >= 0, n_head > 0 and hpg > 0");
    for (int64_t t = 0; t < n_tokens; ++t)
        for (int64_t h = 0; h < n_head; ++h) {
            const int64_t col = (h / hpg) * group_stride + h % hpg;
            g[t * g_stride + h] = ssm_softplus(alpha[t * alpha_stride + col] + dt_bias[h]) * a[h];
            beta[t * beta_stride + h] = 1.0f / (1.0f + std::exp(-b[t * b_stride + col]));
        }
}

void gated_delta_net(const DeltaNetRef& a) {
    require(a.n_tokens >= 0 && a.n_head_k > 0 && a.n_head_v > 0 && a.d_k > 0 && a.d_v > 0,
            "needs n_tokens >= 0 and positive head counts and sizes");
    require(a.n_head_v % a.n_head_k == 0, "n_head_v " + std::to_string(a.n_head_v) +
                                              " is not a multiple of n_head_k " + std::to_string(a.n_head_k));
    require(a.state && a.q && a.k && a.v && a.g && a.beta && a.out, "a required operand is null");
    const int64_t dk = a.d_k, dv = a.d_v, rep = a.n_head_v / a.n_head_k;
    const float scale = a.scale != 0.0f ? a.scale : 1.0f / std::sqrt(float(dk));
    std::vector<float> qn(static_cast<size_t>(dk)), kn(qn), decay(qn), d(static_cast<size_t>(dv));
    for (int64_t t = 0; t < a.n_tokens; ++t) {
        for (int64_t h = 0; h < a.n_head_v; ++h) {
            const int64_t kh = a.share == DeltaHeadShare::Interleaved ? h / rep : h % a.n_head_k;
            const float* q = a.q + t * a.q_stride + kh * dk;
            const float* k = a.k + t * a.k_stride + kh * dk;
            if (a.l2_norm_qk) {
                delta_net_l2_norm(q, qn.data(), dk, a.l2_eps);
                delta_net_l2_norm(k, kn.data(), dk, a.l2_eps);
            } else {
                qn.assign(q, q + dk);
                kn.assign(k, k + dk);
            }
            const float* v = a.v + t * a.v_stride + h * dv;
            const float beta = a.beta[t * a.beta_stride + h];
            float* M = a.state + h * dv * dk;  // M[j][i] = S[i][j]
            if (a.per_key_decay) {
                for (int64_t i = 0; i < dk; ++i) decay[size_t(i)] = std::exp(a.g[t * a.g_stride + h * dk + i]);
            } else {
                const float e = std::exp(a.g[t * a.g_stride + h]);
                for (int64_t i = 0; i < dk; ++i) decay[size_t(i)] = e;
            }
            for (int64_t j = 0; j < dv; ++j)
                for (int64_t i = 0; i < dk; ++i) M[j * dk + i] *= decay[size_t(i)];
            for (int64_t j = 0; j < dv; ++j) {
                float sk = 0.0f;
                for (int64_t i = 0; i < dk; ++i) sk += M[j * dk + i] * kn[size_t(i)];
                d[size_t(j)] = (v[j] - sk) * beta;
            }
            for (int64_t j = 0; j < dv; ++j)
                for (int64_t i = 0; i < dk; ++i) M[j * dk + i] += kn[size_t(i)] * d[size_t(j)];
            float* o = a.out + t * a.out_stride + h * dv;
            for (int64_t j = 0; j < dv; ++j) {
                float sq = 0.0f;
                for (int64_t i = 0; i < dk; ++i) sq += M[j * dk + i] * qn[size_t(i)];
                o[j] = sq * scale;
            }
        }
    }
}

}  // namespace vkllm::cpu
