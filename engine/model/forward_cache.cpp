// Forward::truncate: dropping the newest positions from the KV caches.
#include <algorithm>

#include "model/forward.h"

namespace vkllm::model {

// A slot is found by its position (slot = position % slots), and attention masks come from the
// position each slot holds, so forgetting positions >= n is marking their slots empty. A
// global cache keeps every position, so positions < n are intact. A sliding-window ring of
// `slots` slots only holds the newest `slots` positions evaluated: positions < n whose slots
// were reused by the dropped ones are gone. A later query at position q >= n reads keys in
// (q - window, q], so what must still be held is [n - window + 1, n).
bool Forward::truncate(int n) {
    bool intact = true;
    for (size_t l = 0; l < caches_.size(); ++l) {
        const KvCache& c = caches_[l];
        if (!c.ring) continue;
        const auto* slot_pos = static_cast<const int32_t*>(c.slot_pos->mapped());
        for (int p = std::max(0, n - spec_.layers[l].attn.window + 1); p < n; ++p)
            if (slot_pos[p % c.slots] != p) intact = false;
    }
    for (auto& [slots, buf] : slot_pos_) {
        auto* slot_pos = static_cast<int32_t*>(buf.mapped());
        for (int i = 0; i < slots; ++i)
            if (slot_pos[i] >= n) slot_pos[i] = -1;
    }
    return intact;
}

}  // namespace vkllm::model
