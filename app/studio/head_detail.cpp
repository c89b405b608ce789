#include "head_detail.h"

namespace vkllm::studio {

HeadDetailView head_detail(const ProbeHistory& h, int layer, int head) {
    HeadDetailView v;
    for (const auto& e : h.evals) {
        for (const AttentionThumbnail& t : e->results.attention_thumbnails)
            if (t.layer == layer && t.head == head && (!v.has_thumbnail || t.rows >= v.thumbnail.rows)) {
                v.thumbnail = t;
                v.has_thumbnail = true;
            }
        for (const AttentionTopK& t : e->results.attention_top_k)
            if (t.layer == layer && t.head == head && t.n_query() > 0) {
                // Evals are in order: the newest one with rows wins.
                v.has_top = true;
                v.query_pos = t.query_pos.back();
                v.top.clear();
                const size_t row = size_t(t.n_query() - 1) * size_t(t.k);
                for (int i = 0; i < t.k; ++i)
                    if (t.key_pos[row + size_t(i)] >= 0) v.top.push_back({t.key_pos[row + size_t(i)], t.probs[row + size_t(i)]});
            }
    }
    return v;
}

}  // namespace vkllm::studio
