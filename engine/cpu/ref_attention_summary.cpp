#include "cpu/ref_attention_summary.h"

#include <algorithm>
#include <cmath>

namespace vkllm::cpu {

AttentionRowStats attention_row_stats(const float* probs, const int* key_pos, int n_key, int q_pos, float sink) {
    AttentionRowStats st;
    for (int k = 0; k < n_key; ++k) {
        const double p = probs[k];
        if (key_pos[k] < 0 || !(p > 0)) continue;
        st.entropy -= p * std::log(p);
        if (key_pos[k] == 0) st.sink_mass += p;
        st.mean_distance += p * double(q_pos - key_pos[k]);
        st.max_prob = std::max(st.max_prob, p);
    }
    if (sink > 0) {
        st.entropy -= double(sink) * std::log(double(sink));
        st.sink_mass += sink;
    }
    return st;
}

std::vector<AttentionSummary> attention_summary(const AttentionMap& m) {
    std::vector<AttentionSummary> out;
    const int Q = m.n_query();
    for (int h = 0; h < m.n_head; ++h) {
        AttentionRowStats sum;
        for (int q = 0; q < Q; ++q) {
            const float* row = &m.probs[(size_t(h) * size_t(Q) + size_t(q)) * size_t(m.n_key())];
            const float sink = m.sink.empty() ? 0.0f : m.sink[size_t(h) * size_t(Q) + size_t(q)];
            const AttentionRowStats r = attention_row_stats(row, m.key_pos.data(), m.n_key(), m.query_pos[size_t(q)], sink);
            sum.entropy += r.entropy;
            sum.sink_mass += r.sink_mass;
            sum.mean_distance += r.mean_distance;
            sum.max_prob += r.max_prob;
        }
        AttentionSummary s;
        s.layer = m.layer;
        s.head = m.head >= 0 ? m.head : h;
        s.rows = Q;
        const double n = std::max(Q, 1);
        s.entropy = float(sum.entropy / n);
        s.sink_mass = float(sum.sink_mass / n);
        s.mean_distance = float(sum.mean_distance / n);
        s.max_prob = float(sum.max_prob / n);
        out.push_back(s);
    }
    return out;
}

}  // namespace vkllm::cpu
