// Token probabilities from a row of logits, computed as the engine computes generate()'s
// TokenEvent::logprob and its top alternatives: a log softmax in double over the whole
// vocabulary (NaN logits count as -inf; +inf logits share the mass), the most likely first with
// ties to the lower id. For front-ends that read logits themselves (fill-mask, perplexity).
#pragma once

#include <cstdint>
#include <vector>

namespace vkllm {

// log softmax(logits[0, n_vocab)). Throws std::runtime_error when n_vocab <= 0 or every logit
// is NaN or -inf.
std::vector<double> log_softmax(const float* logits, int n_vocab);

// The min(n, log_probs.size()) most likely token ids under log_probs, most likely first (ties:
// the lower id); none when n <= 0.
std::vector<int32_t> most_likely(const std::vector<double>& log_probs, int n);

}  // namespace vkllm
