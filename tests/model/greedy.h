// Greedy continuation for the end-to-end tests: the argmax of the last logits, fed back token by
// token through the session's KV cache, the way llama.cpp's oracle made its golden greedy text.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "vkllm/session.h"

namespace vkllm::test {

// `last`: the logits of the last token evaluated [n_vocab]. Evaluates n - 1 more tokens.
inline std::vector<int32_t> greedy_continuation(Session& session, std::vector<float> last, size_t n) {
    std::vector<int32_t> out;
    while (out.size() < n) {
        out.push_back(int32_t(std::max_element(last.begin(), last.end()) - last.begin()));
        if (out.size() < n) last = session.eval({out.back()});
    }
    return out;
}

}  // namespace vkllm::test
