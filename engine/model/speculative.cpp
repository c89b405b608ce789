// Speculative decoding's draft side: the vocabulary check and the greedy proposals of the
// draft Session (through its public API: eval, truncate, tokens).
#include "model/speculative.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "vkllm/generate.h"
#include "vkllm/model.h"

namespace vkllm {

namespace {

std::string model_name(const Model& m) { return m.info().name.empty() ? m.info().arch : m.info().name; }

}  // namespace

void check_draft_vocabulary(const Model& target, const Model& draft) {
    const std::string names = "the draft model (" + model_name(draft) + ") and the target (" + model_name(target) + ")";
    if (draft.n_vocab() != target.n_vocab())
        throw std::invalid_argument(names + " have different vocabularies: " + std::to_string(draft.n_vocab()) +
                                    " and " + std::to_string(target.n_vocab()) +
                                    " tokens; speculative decoding needs one tokenizer");
    // Same size is not enough: the ids must mean the same text, so every token is compared.
    for (int32_t id = 0; id < target.n_vocab(); ++id)
        if (draft.token_text(id) != target.token_text(id))
            throw std::invalid_argument(names + " have different vocabularies: token " + std::to_string(id) +
                                        " is '" + draft.token_text(id) + "' in the draft and '" +
                                        target.token_text(id) + "' in the target; speculative decoding needs one tokenizer");
}

namespace model {

namespace {

// The first id of the largest logit (the engine's greedy rule; NaN is never chosen).
int32_t argmax(const float* logits, size_t n) {
    size_t best = n;
    for (size_t i = 0; i < n; ++i)
        if (logits[i] == logits[i] && (best == n || logits[i] > logits[best])) best = i;
    if (best == n) throw std::runtime_error("the draft model's logits are all NaN");
    return int32_t(best);
}

}  // namespace

Drafter::Drafter(Session& draft, int n_draft) : draft_(draft), n_draft_(n_draft) {
    if (n_draft < 1) throw std::invalid_argument("n_draft must be >= 1, got " + std::to_string(n_draft));
}

std::vector<int32_t> Drafter::propose(const std::vector<int32_t>& context, int32_t pending, int k,
                                      const std::atomic<bool>& cancel) {
    std::vector<int32_t> wanted = context;
    wanted.push_back(pending);
    // The draft evaluates all of `wanted` and every proposal but the last.
    k = std::min({k, n_draft_, draft_.n_ctx() - int(wanted.size()) + 1});
    std::vector<int32_t> out;
    if (k <= 0) return out;

    const std::vector<int32_t>& have = draft_.tokens();
    const size_t common = size_t(std::mismatch(wanted.begin(), wanted.end(), have.begin(), have.end()).first - wanted.begin());
    const size_t keep = std::min(common, wanted.size() - 1);  // at least one token evaluated, for its logits
    draft_.truncate(int(keep));
    std::vector<float> logits = draft_.eval(std::vector<int32_t>(wanted.begin() + long(keep), wanted.end()));
    const size_t n_vocab = logits.size();
    for (;;) {
        out.push_back(argmax(logits.data(), n_vocab));
        if (int(out.size()) == k || cancel.load()) break;
        logits = draft_.eval({out.back()});
    }
    return out;
}

}  // namespace model
}  // namespace vkllm
