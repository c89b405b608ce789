// CPU reference of the attention summaries (ops::attention_summary, ProbeConfig::attention_summary):
// the same statistics computed in double precision from a full attention map.
#pragma once

#include <vector>

#include "vkllm/probe.h"

namespace vkllm::cpu {

struct AttentionRowStats {
    double entropy = 0, sink_mass = 0, mean_distance = 0, max_prob = 0;
};

// One query row: probabilities of n_key keys at key_pos (negative: an empty slot, skipped), the
// query at q_pos, and the learned sink's probability (0 without).
AttentionRowStats attention_row_stats(const float* probs, const int* key_pos, int n_key, int q_pos, float sink);

// Each head's means over the map's query rows (AttentionSummary, layer and head from the map;
// a single-head map gives its own head).
std::vector<AttentionSummary> attention_summary(const AttentionMap& m);

}  // namespace vkllm::cpu
