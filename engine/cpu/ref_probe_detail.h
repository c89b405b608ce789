// CPU reference of the attention probes' detail (ops::attention_detail,
// ProbeConfig::attention_top_k and attention_thumbnail), computed from a full attention map.
#pragma once

#include <vector>

#include "vkllm/probe.h"

namespace vkllm::cpu {

// Each head's top-k keys of every query row of the map (layer and head from the map; a
// single-head map gives its own head): keys of probability > 0, most probable first, equal ones
// in key-position order, (-1, 0) after the last.
std::vector<AttentionTopK> attention_top_k(const AttentionMap& m, int k);

// Each head's map max-pooled into cells of the smallest power of two positions that fits the
// keys 0..newest query position into `cells` columns (AttentionThumbnail).
std::vector<AttentionThumbnail> attention_thumbnails(const AttentionMap& m, int cells);

}  // namespace vkllm::cpu
