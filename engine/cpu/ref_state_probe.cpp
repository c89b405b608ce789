// CPU reference of the state probes (ref_state_probe.h).
#include "cpu/ref_state_probe.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "cpu/ref_ops.h"

namespace vkllm::cpu {

namespace {

void require(bool ok, const char* op, const std::string& message) {
    if (!ok) throw ShapeError(std::string(op) + ": " + message);
}

float softplus(float v) { return v > 20.0f ? v : std::log1p(std::exp(v)); }

StateTrace make_trace(int64_t n_tokens, int64_t n_head) {
    StateTrace t;
    t.n_tokens = n_tokens, t.n_head = n_head;
    t.norm.assign(size_t(n_tokens * n_head), 0.0f);
    t.decay.assign(size_t(n_tokens * n_head), 0.0f);
    return t;
}

}  // namespace

StateTrace ssm_state_trace(const SsmStateRef& r) {
    require(r.n_tokens >= 0 && r.n_head > 0 && r.head_dim > 0 && r.d_state > 0 && r.n_group > 0 &&
                r.n_head % r.n_group == 0,
            "ssm_state_trace", "needs positive sizes, n_head a multiple of n_group");
    require(r.state && r.x && r.b && r.dt && r.a, "ssm_state_trace", "a required operand is null");
    StateTrace out = make_trace(r.n_tokens, r.n_head);
    const int64_t per_group = r.n_head / r.n_group;
    for (int64_t t = 0; t < r.n_tokens; ++t)
        for (int64_t h = 0; h < r.n_head; ++h) {
            const float sp = softplus(r.dt[t * r.dt_stride + h] + (r.dt_bias ? r.dt_bias[h] : 0.0f));
            const float dA = std::exp(sp * r.a[h]);
            const float* B = r.b + t * r.b_stride + (h / per_group) * r.d_state;
            double sq = 0;
            for (int64_t i = 0; i < r.head_dim; ++i) {
                const int64_t row = h * r.head_dim + i;
                const float x_dt = r.x[t * r.x_stride + row] * sp;
                float* s = r.state + row * r.d_state;
                for (int64_t j = 0; j < r.d_state; ++j) {
                    s[j] = s[j] * dA + B[j] * x_dt;
                    sq += double(s[j]) * s[j];
                }
            }
            out.norm[size_t(t * r.n_head + h)] = float(std::sqrt(sq));
            out.decay[size_t(t * r.n_head + h)] = dA;
        }
    return out;
}

StateTrace mamba1_state_trace(const Mamba1StateRef& r) {
    require(r.n_tokens >= 0 && r.d_inner > 0 && r.d_state > 0, "mamba1_state_trace", "needs positive sizes");
    require(r.state && r.x && r.b && r.dt && r.a, "mamba1_state_trace", "a required operand is null");
    StateTrace out = make_trace(r.n_tokens, 1);
    for (int64_t t = 0; t < r.n_tokens; ++t) {
        double sq = 0, decay = 0;
        const float* B = r.b + t * r.b_stride;
        for (int64_t c = 0; c < r.d_inner; ++c) {
            const float sp = softplus(r.dt[t * r.dt_stride + c]);
            const float x_dt = r.x[t * r.x_stride + c] * sp;
            float* s = r.state + c * r.d_state;
            for (int64_t j = 0; j < r.d_state; ++j) {
                const float dA = std::exp(sp * r.a[c * r.d_state + j]);
                s[j] = s[j] * dA + B[j] * x_dt;
                sq += double(s[j]) * s[j];
                decay += dA;
            }
        }
        out.norm[size_t(t)] = float(std::sqrt(sq));
        out.decay[size_t(t)] = float(decay / double(r.d_inner * r.d_state));
    }
    return out;
}

StateTrace rwkv7_state_trace(const Rwkv7StateRef& r) {
    require(r.n_tokens >= 0 && r.n_head > 0 && r.head_size > 0, "rwkv7_state_trace", "needs positive sizes");
    require(r.state && r.w && r.k && r.v && r.a && r.b, "rwkv7_state_trace", "a required operand is null");
    const int64_t N = r.head_size;
    StateTrace out = make_trace(r.n_tokens, r.n_head);
    for (int64_t t = 0; t < r.n_tokens; ++t)
        for (int64_t h = 0; h < r.n_head; ++h) {
            const int64_t c0 = t * r.stride + h * N;
            const float *w = r.w + c0, *k = r.k + c0, *v = r.v + c0, *a = r.a + c0, *b = r.b + c0;
            double sq = 0, wsum = 0;
            for (int64_t j = 0; j < N; ++j) wsum += w[j];
            for (int64_t i = 0; i < N; ++i) {
                float* S = r.state + (h * N + i) * N;
                float sa = 0;
                for (int64_t j = 0; j < N; ++j) sa += a[j] * S[j];
                for (int64_t j = 0; j < N; ++j) {
                    S[j] = S[j] * w[j] + v[i] * k[j] + sa * b[j];
                    sq += double(S[j]) * S[j];
                }
            }
            out.norm[size_t(t * r.n_head + h)] = float(std::sqrt(sq));
            out.decay[size_t(t * r.n_head + h)] = float(wsum / double(N));
        }
    return out;
}

StateTrace delta_net_state_trace(const DeltaNetRef& r) {
    require(r.n_tokens >= 0 && r.n_head_v > 0 && r.d_k > 0 && r.d_v > 0, "delta_net_state_trace",
            "needs positive sizes");
    require(r.state && r.g, "delta_net_state_trace", "a required operand is null");
    StateTrace out = make_trace(r.n_tokens, r.n_head_v);
    const int64_t per_head = r.d_v * r.d_k, dk = r.d_k;
    std::vector<float> o(static_cast<size_t>(r.n_head_v * r.d_v));
    for (int64_t t = 0; t < r.n_tokens; ++t) {
        DeltaNetRef step = r;  // token t alone, its output into a scratch row
        step.n_tokens = 1;
        step.q = r.q + t * r.q_stride, step.k = r.k + t * r.k_stride, step.v = r.v + t * r.v_stride;
        step.g = r.g + t * r.g_stride, step.beta = r.beta + t * r.beta_stride;
        step.out = o.data(), step.out_stride = 0;
        gated_delta_net(step);
        for (int64_t h = 0; h < r.n_head_v; ++h) {
            double sq = 0, decay = 0;
            for (int64_t e = 0; e < per_head; ++e) sq += double(r.state[h * per_head + e]) * r.state[h * per_head + e];
            for (int64_t i = 0; i < dk; ++i) decay += std::exp(double(step.g[r.per_key_decay ? h * dk + i : h]));
            out.norm[size_t(t * r.n_head_v + h)] = float(std::sqrt(sq));
            out.decay[size_t(t * r.n_head_v + h)] = float(decay / double(dk));
        }
    }
    return out;
}

std::vector<float> ssm_mix_map(const SsmMixMapRef& r) {
    require(r.n_tokens >= 0 && r.n_head > 0 && r.d_state > 0 && r.n_group > 0 && r.n_head % r.n_group == 0,
            "ssm_mix_map", "needs positive sizes, n_head a multiple of n_group");
    require(r.head >= 0 && r.head < r.n_head, "ssm_mix_map", "head outside the layer's heads");
    require(r.b && r.c && r.dt && r.a, "ssm_mix_map", "a required operand is null");
    const int64_t n = r.n_tokens, g = r.head / (r.n_head / r.n_group);
    std::vector<double> dt(static_cast<size_t>(n)), log_decay(static_cast<size_t>(n));
    for (int64_t t = 0; t < n; ++t) {
        dt[size_t(t)] = softplus(r.dt[t * r.dt_stride + r.head] + (r.dt_bias ? r.dt_bias[r.head] : 0.0f));
        log_decay[size_t(t)] = dt[size_t(t)] * double(r.a[r.head]);
    }
    std::vector<float> m(size_t(n * n), 0.0f);
    for (int64_t t = 0; t < n; ++t) {
        const float* C = r.c + t * r.c_stride + g * r.d_state;
        double decay_sum = 0;  // sum of log decays of tokens s+1..t
        for (int64_t s = t; s >= 0; --s) {
            const float* B = r.b + s * r.b_stride + g * r.d_state;
            double cb = 0;
            for (int64_t j = 0; j < r.d_state; ++j) cb += double(C[j]) * B[j];
            m[size_t(t * n + s)] = float(cb * std::exp(decay_sum) * dt[size_t(s)]);
            decay_sum += log_decay[size_t(s)];
        }
    }
    return m;
}

std::vector<float> delta_net_mix_map(const DeltaNetRef& r, int64_t head) {
    const char* op = "delta_net_mix_map";
    require(r.n_tokens >= 0 && r.n_head_k > 0 && r.n_head_v > 0 && r.d_k > 0 && r.n_head_v % r.n_head_k == 0, op,
            "needs positive sizes, n_head_v a multiple of n_head_k");
    require(head >= 0 && head < r.n_head_v, op, "head outside the layer's value heads");
    require(r.q && r.k && r.g && r.beta, op, "a required operand is null");
    const int64_t n = r.n_tokens, dk = r.d_k, rep = r.n_head_v / r.n_head_k;
    const int64_t kh = r.share == DeltaHeadShare::Interleaved ? head / rep : head % r.n_head_k;
    const double scale = r.scale != 0.0f ? r.scale : 1.0 / std::sqrt(double(dk));
    // The head's q and k (normalised as the layer does) and log-decays, [t][i].
    std::vector<float> q(static_cast<size_t>(n * dk)), k(q.size());
    std::vector<double> g(q.size()), beta(static_cast<size_t>(n));
    for (int64_t t = 0; t < n; ++t) {
        const float* qt = r.q + t * r.q_stride + kh * dk;
        const float* kt = r.k + t * r.k_stride + kh * dk;
        if (r.l2_norm_qk) {
            delta_net_l2_norm(qt, q.data() + t * dk, dk, r.l2_eps);
            delta_net_l2_norm(kt, k.data() + t * dk, dk, r.l2_eps);
        } else {
            std::copy(qt, qt + dk, q.begin() + t * dk);
            std::copy(kt, kt + dk, k.begin() + t * dk);
        }
        for (int64_t i = 0; i < dk; ++i)
            g[size_t(t * dk + i)] = r.g[t * r.g_stride + (r.per_key_decay ? head * dk + i : head)];
        beta[size_t(t)] = r.beta[t * r.beta_stride + head];
    }
    // a[t][u] = k_t^T P(u,t) k_u and b[t][u] = q_t^T P(u,t) k_u for u <= t; P's log, the sum of
    // g over tokens u+1..t, is summed pair by pair so that a decay of 0 (g = -inf) stays exact.
    std::vector<double> a(static_cast<size_t>(n * n), 0.0), b(a.size(), 0.0), logp(static_cast<size_t>(dk));
    for (int64_t t = 0; t < n; ++t) {
        std::fill(logp.begin(), logp.end(), 0.0);
        for (int64_t u = t; u >= 0; --u) {
            double au = 0, bu = 0;
            for (int64_t i = 0; i < dk; ++i) {
                const double p = std::exp(logp[size_t(i)]) * k[size_t(u * dk + i)];
                au += p * k[size_t(t * dk + i)];
                bu += p * q[size_t(t * dk + i)];
                logp[size_t(i)] += g[size_t(u * dk + i)];
            }
            a[size_t(t * n + u)] = au;
            b[size_t(t * n + u)] = bu;
        }
    }
    // Per key s: column s of T by forward substitution (e for v = the unit impulse at s), then M.
    std::vector<float> m(size_t(n * n), 0.0f);
    std::vector<double> e(static_cast<size_t>(n));
    for (int64_t s = 0; s < n; ++s) {
        for (int64_t u = s; u < n; ++u) {
            double z = u == s ? 1.0 : 0.0;
            for (int64_t w = s; w < u; ++w) z -= a[size_t(u * n + w)] * e[size_t(w)];
            e[size_t(u)] = beta[size_t(u)] * z;
        }
        for (int64_t t = s; t < n; ++t) {
            double o = 0;
            for (int64_t u = s; u <= t; ++u) o += b[size_t(t * n + u)] * e[size_t(u)];
            m[size_t(t * n + s)] = float(scale * o);
        }
    }
    return m;
}

}  // namespace vkllm::cpu
