// CPU reference of the logit lens's reduction (ops::lens_top_k, LogitLensGrid): a row of logits
// to its softmax and most probable tokens.
#pragma once

#include <cstdint>
#include <vector>

namespace vkllm::cpu {

struct LensPick {
    int32_t id = -1;  // -1: past the tokens of probability > 0
    float p = 0;
};

// Per row of logits [n_rows][n_vocab]: the softmax (in double) and its k most probable tokens,
// most probable first, equal logits in id order; a row with fewer than k tokens of probability
// > 0 in float ends in (-1, 0). [n_rows][k].
std::vector<LensPick> lens_top_k(const float* logits, int n_rows, int n_vocab, int k);

}  // namespace vkllm::cpu
