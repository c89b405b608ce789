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

// Per (query row, head) detail of attention probabilities (shaders/attention_detail.comp): the
// top-k keys of each row and a max-pooled thumbnail of each head's map.
//   probs, q_pos, kv_pos as attention_summary's (a sink column after the rows is not read)
//   top:    int32 [n_q, n_head * top_k * 2]: per row and head its top_k largest probabilities,
//           largest first (equal ones in key-position order), as pairs (the float's bits, key
//           position); a row with fewer visible keys ends in (0, -1). Unused when top_k is 0.
//   thumb:  int32 [n_head * cells, cells], the float bits of each cell's largest probability:
//           thumb[h][query_pos / cell - query_cell0][key_pos / cell] is max-combined with the
//           rows' probabilities (rows and keys outside the cells are left out), so a map may be
//           pooled a block of rows at a time into cells the caller zeroed first. Unused when
//           cells is 0.
// Packed rows. One dispatch; no barrier.
constexpr int kMaxAttentionTopK = 16;
constexpr int kMaxAttentionCells = 256;
struct AttentionDetailArgs {
    TensorView probs, q_pos, kv_pos;
    int n_head = 0;
    int top_k = 0;
    TensorView top;
    int cells = 0, cell = 1, query_cell0 = 0;
    TensorView thumb;
};
void attention_detail(Stream& s, const AttentionDetailArgs& a);

}  // namespace vkllm::ops
