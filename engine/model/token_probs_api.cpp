// vkllm/token_probs.h: the sampler's log softmax and the shared top-n selection behind the API.
#include "vkllm/token_probs.h"

#include <algorithm>

#include "core/top_n.h"
#include "sampling/sampler.h"

namespace vkllm {

std::vector<double> log_softmax(const float* logits, int n_vocab) { return sampling::log_softmax(logits, n_vocab); }

std::vector<int32_t> most_likely(const std::vector<double>& log_probs, int n) {
    return top_n(log_probs.data(), log_probs.size(), size_t(std::max(n, 0)));
}

}  // namespace vkllm
