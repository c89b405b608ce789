// The logit lens's reduction on the GPU (engine/ops/lens_top_k.cpp): rows of logits to their
// softmax and most probable tokens, so a lens grid copies k (id, probability) pairs per cell to
// the host instead of a vocabulary of floats.
#pragma once

#include "ops/ops.h"

namespace vkllm::ops {

// logits: f32 [n_rows, n_vocab], packed rows; replaced by their softmax (probabilities).
// ids:    int32 with at least max(n_rows, n_vocab) elements holding 0, 1, 2, ...: the token ids
//         (and the rows' indices, which the top-k kernel is given as its query positions).
// top:    int32 [n_rows, k * 2], packed: per row its k most probable tokens, most probable first
//         (equal probabilities in id order), as pairs (the probability's float bits, token id);
//         a row with fewer than k tokens of probability > 0 ends in (0, -1).
// k:      1..kMaxAttentionTopK (16).
// Records the softmax (shaders/softmax.comp), a barrier, then the top-k of every row as the
// attention probes' top keys (shaders/attention_detail.comp over one head whose keys are the
// token ids). No barrier after it.
void lens_top_k(Stream& s, const TensorView& logits, const TensorView& ids, const TensorView& top, int k);

}  // namespace vkllm::ops
