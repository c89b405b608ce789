// GPU ops of the probes: statistics computed where the data is, so that a probe copies to the
// host a few numbers per row instead of whole attention maps.
#pragma once

#include <cstdint>

#include "ops/ops.h"

namespace vkllm::ops {

// Per (query row, head) statistics of attention probabilities (shaders/attention_summary.comp):
//   probs:  ops::attention's probabilities, f32 [n_q, n_head * n_kv]; with has_sinks the buffer
//           holds after them [n_q, n_head], each row's sink probability
//   q_pos:  int32 [n_q]     kv_pos: int32 [n_kv] (slots < 0 are empty)
//   stats:  f32 [n_q, n_head * 4]: entropy (nats, the sink included), the mass of the key at
//           position 0 plus the sink's, the mean distance sum_k p_k (q_pos - kv_pos_k), and the
//           largest key probability
// Packed rows. One dispatch; no barrier.
constexpr int kAttentionStats = 4;
void attention_summary(Stream& s, const TensorView& probs, bool has_sinks, const TensorView& q_pos,
                       const TensorView& kv_pos, const TensorView& stats, int n_head);

}  // namespace vkllm::ops
