// Reference scaled dot-product attention (Vaswani et al. 2017) with GQA, causal, sliding
// window and chunked masks, logit soft-capping (Gemma 2), ALiBi distance penalties (Jais) and
// attention sinks (gpt-oss).
// Everything is computed in double from the float inputs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cpu/ref_ops.h"

namespace vkllm::cpu {

namespace {

// Floor division, so chunks of negative positions are well defined too.
int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

void check_attention(const AttentionParams& p) {
    if (p.n_head <= 0 || p.n_head_kv <= 0 || p.head_dim <= 0 || p.head_dim_v < 0)
        throw ShapeError("attention: n_head, n_head_kv and head_dim must be positive");
    if (p.n_head % p.n_head_kv != 0)
        throw ShapeError("attention: n_head " + std::to_string(p.n_head) + " is not a multiple of n_head_kv " +
                         std::to_string(p.n_head_kv));
    if (p.window < 0 || p.chunk < 0) throw ShapeError("attention: window and chunk must be >= 0");
    if (p.softcap < 0.0f) throw ShapeError("attention: softcap must be >= 0");
    if (!(p.max_alibi_bias >= 0.0f)) throw ShapeError("attention: max_alibi_bias must be >= 0");
}

}  // namespace

bool attention_visible(int32_t q_pos, int32_t k_pos, const AttentionParams& p) {
    if (p.causal && k_pos > q_pos) return false;
    if (p.window > 0 && static_cast<int64_t>(k_pos) <= static_cast<int64_t>(q_pos) - p.window) return false;
    if (p.chunk > 0 && floor_div(k_pos, p.chunk) != floor_div(q_pos, p.chunk)) return false;
    return true;
}

void attention(const float* q, const float* k, const float* v, const int32_t* q_pos, const int32_t* k_pos,
               float* out, float* probs_out, int64_t n_q, int64_t n_kv, const AttentionParams& p,
               const float* sinks) {
    check_attention(p);
    if (n_q < 0 || n_kv < 0) throw ShapeError("attention: negative n_q or n_kv");
    const int group = p.n_head / p.n_head_kv;  // query heads per kv head
    const int dv = p.value_dim();
    const double neg_inf = -std::numeric_limits<double>::infinity();

    std::vector<double> logits(static_cast<size_t>(n_kv));  // [n_kv] of one (query, head)
    std::vector<double> acc(static_cast<size_t>(dv));
    for (int64_t i = 0; i < n_q; ++i) {
        for (int h = 0; h < p.n_head; ++h) {
            const int hk = h / group;
            const float* qh = q + (i * p.n_head + h) * p.head_dim;
            const double slope = p.alibi_slope(h);

            double max_logit = sinks ? static_cast<double>(sinks[h]) : neg_inf;
            for (int64_t j = 0; j < n_kv; ++j) {
                if (!attention_visible(q_pos[i], k_pos[j], p)) {
                    logits[j] = neg_inf;
                    continue;
                }
                const float* kh = k + (j * p.n_head_kv + hk) * p.head_dim;
                double dot = 0.0;
                for (int d = 0; d < p.head_dim; ++d) dot += static_cast<double>(qh[d]) * kh[d];
                double s = dot * p.scale;
                if (p.softcap > 0.0f) s = p.softcap * std::tanh(s / p.softcap);
                s -= slope * std::abs(static_cast<double>(q_pos[i]) - k_pos[j]);
                logits[j] = s;
                max_logit = std::max(max_logit, s);
            }

            float* oh = out + (i * p.n_head + h) * dv;
            float* ph = probs_out ? probs_out + (i * p.n_head + h) * n_kv : nullptr;
            if (max_logit == neg_inf) {  // nothing visible and no sink
                std::fill(oh, oh + dv, 0.0f);
                if (ph) std::fill(ph, ph + n_kv, 0.0f);
                continue;
            }
            // The sink adds exp(sink - max) to the denominator and nothing to the numerator.
            double denom = sinks ? std::exp(sinks[h] - max_logit) : 0.0;
            for (int64_t j = 0; j < n_kv; ++j) {
                logits[j] = std::exp(logits[j] - max_logit);  // exp(-inf) = 0 for masked keys
                denom += logits[j];
            }
            std::fill(acc.begin(), acc.end(), 0.0);
            for (int64_t j = 0; j < n_kv; ++j) {
                const double prob = logits[j] / denom;
                if (ph) ph[j] = static_cast<float>(prob);
                if (prob == 0.0) continue;
                const float* vh = v + (j * p.n_head_kv + hk) * dv;
                for (int d = 0; d < dv; ++d) acc[d] += prob * vh[d];
            }
            for (int d = 0; d < dv; ++d) oh[d] = static_cast<float>(acc[d]);
        }
    }
}

}  // namespace vkllm::cpu
