// GPU ops of the probes: statistics computed where the data is, so that a probe copies to the
// host a few numbers per row instead of whole attention maps.
#pragma once

#include <cstdint>

#include "ops/ops.h"

namespace vkllm::ops {

// Per (query row, head) statistics of attention probabilities (shaders/attention_summary.comp):
//   probs:  ops::attention's probabilities [n_q, n_head, n_kv] from probs_offset; with
//           has_sinks followed by [n_q, n_head], each row's sink probability
//   q_pos:  int32 [n_q] from q_pos_offset     kv_pos: int32 [n_kv] (slots < 0 are empty)
//   stats:  [n_q, n_head, 4] from stats_offset: entropy (nats, the sink included), the mass of
//           the key at position 0 plus the sink's, the mean distance sum_k p_k (q_pos - kv_pos_k),
//           and the largest key probability
// One dispatch; no barrier.
constexpr int kAttentionStats = 4;
void attention_summary(Stream& s, const Buffer& probs, uint64_t probs_offset, bool has_sinks, const Buffer& q_pos,
                       uint64_t q_pos_offset, const Buffer& kv_pos, const Buffer& stats, uint64_t stats_offset,
                       int64_t n_q, int n_head, int64_t n_kv);

}  // namespace vkllm::ops
