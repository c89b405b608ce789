#include "cpu/ref_probe_detail.h"

#include <algorithm>
#include <stdexcept>

namespace vkllm::cpu {

std::vector<AttentionTopK> attention_top_k(const AttentionMap& m, int k) {
    if (k < 1) throw std::invalid_argument("attention_top_k: k must be at least 1");
    std::vector<AttentionTopK> out;
    const int Q = m.n_query(), N = m.n_key();
    for (int h = 0; h < m.n_head; ++h) {
        AttentionTopK t;
        t.layer = m.layer;
        t.head = m.head >= 0 ? m.head : h;
        t.k = k;
        t.query_pos = m.query_pos;
        for (int q = 0; q < Q; ++q) {
            std::vector<std::pair<float, int>> seen;  // (p, key position)
            for (int j = 0; j < N; ++j)
                if (m.at(h, q, j) > 0) seen.push_back({m.at(h, q, j), m.key_pos[size_t(j)]});
            std::sort(seen.begin(), seen.end(), [](const auto& a, const auto& b) {
                return a.first > b.first || (a.first == b.first && a.second < b.second);
            });
            for (int i = 0; i < k; ++i) {
                const bool some = i < int(seen.size());
                t.probs.push_back(some ? seen[size_t(i)].first : 0.0f);
                t.key_pos.push_back(some ? seen[size_t(i)].second : -1);
            }
        }
        out.push_back(std::move(t));
    }
    return out;
}

std::vector<AttentionThumbnail> attention_thumbnails(const AttentionMap& m, int cells) {
    if (cells < 1) throw std::invalid_argument("attention_thumbnails: cells must be at least 1");
    std::vector<AttentionThumbnail> out;
    const int Q = m.n_query(), N = m.n_key();
    if (Q == 0) return out;
    const int newest = m.query_pos.back();
    int cell = 1;
    while ((newest + 1 + cell - 1) / cell > cells) cell *= 2;
    const int first = m.query_pos.front() / cell * cell;
    for (int h = 0; h < m.n_head; ++h) {
        AttentionThumbnail t;
        t.layer = m.layer;
        t.head = m.head >= 0 ? m.head : h;
        t.cell = cell;
        t.query_first = first;
        t.rows = newest / cell - first / cell + 1;
        t.cols = newest / cell + 1;
        t.max_prob.assign(size_t(t.rows) * size_t(t.cols), 0.0f);
        for (int q = 0; q < Q; ++q) {
            const int r = (m.query_pos[size_t(q)] - first) / cell;
            for (int j = 0; j < N; ++j) {
                const int c = m.key_pos[size_t(j)] / cell;
                if (c >= t.cols) continue;
                float& v = t.max_prob[size_t(r) * size_t(t.cols) + size_t(c)];
                v = std::max(v, m.at(h, q, j));
            }
        }
        out.push_back(std::move(t));
    }
    return out;
}

}  // namespace vkllm::cpu
