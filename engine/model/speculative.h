// Speculative decoding's draft side (see DraftOptions in vkllm/generate.h): keeps a draft
// Session in step with the target's context and proposes its greedy continuation. The target's
// verification loop is Session::generate's (generate.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "vkllm/session.h"

namespace vkllm::model {

class Drafter {
public:
    // The draft's vocabulary is the target's (check_draft_vocabulary, by the caller). Throws
    // std::invalid_argument for n_draft < 1.
    Drafter(Session& draft, int n_draft);

    // Up to `k` tokens (at most n_draft) the draft expects after `context` + `pending`: its
    // cache is cut to the longest common prefix with them, the rest evaluated, then each
    // proposal's argmax fed back. Fewer when the draft's context has no room for them, or
    // when `cancel` turns true between the draft's passes.
    std::vector<int32_t> propose(const std::vector<int32_t>& context, int32_t pending, int k,
                                 const std::atomic<bool>& cancel);

private:
    Session& draft_;
    int n_draft_;
};

}  // namespace vkllm::model
