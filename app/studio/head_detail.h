// The selected head's GPU detail for the layer x head overview (ProbeConfig::attention_top_k
// and attention_thumbnail): its max-pooled map and the keys its newest query attends to most.
// Pure (no ImGui), so tests compare it with the engine's probes.
#pragma once

#include <utility>
#include <vector>

#include "probe_history.h"

namespace vkllm::studio {

struct HeadDetailView {
    // The thumbnail of the kept eval with the most query rows (the prompt, rather than a
    // one-row decode step); rows x cols cells of `cell` positions.
    bool has_thumbnail = false;
    AttentionThumbnail thumbnail;
    // The newest query row's top keys: (key position, probability), most probable first.
    bool has_top = false;
    int query_pos = 0;
    std::vector<std::pair<int, float>> top;
};
HeadDetailView head_detail(const ProbeHistory& h, int layer, int head);

}  // namespace vkllm::studio
