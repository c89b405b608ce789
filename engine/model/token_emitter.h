// The per-token half of a generation, shared by Session::generate (generate.cpp) and
// BatchGenerator (batch_generate.cpp): samples the token after a row of logits (under the
// options' constraint), fills its TokenEvent (log-probability, alternatives, the text released
// through the UTF-8 decoder and the stop strings) and decides whether the generation ends with
// it. Cancellation, callbacks and evaluating the token are the caller's.
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "model/stop_strings.h"
#include "sampling/sampler.h"
#include "vkllm/generate.h"
#include "vkllm/json_output.h"
#include "vkllm/utf8.h"

namespace vkllm {
class Model;
}

namespace vkllm::model {

// Throws std::invalid_argument naming the first option out of its range (the sampler's, a
// negative max_tokens or top_n, a draft combined with a constraint).
void check_generate_options(const GenerateOptions& o, int32_t n_vocab);

class TokenEmitter {
public:
    using Clock = std::chrono::steady_clock;
    // r: the result the emitted tokens, text, reason and first-token time go into; start: when
    // the generation began (for first_token_seconds). Throws std::invalid_argument when the
    // constraint's TokenBytes are of another vocabulary.
    TokenEmitter(const Model& m, const GenerateOptions& o, GenerateResult& r, Clock::time_point start);

    // The penalties count these tokens as seen (the prompt, when penalize_prompt).
    void accept(const std::vector<int32_t>& ids) {
        for (int32_t t : ids) sampler_.accept(t);
    }
    // Samples the token after `logits` (the row of the token before it, which sits at
    // `position` - 1) in a context of n_ctx tokens and fills ev. True when the generation ends
    // with this token (r.reason says why: end of generation or a closed constraint, max_tokens,
    // a full context, a stop string); its event then releases everything still held.
    bool next(const float* logits, int position, int n_ctx, TokenEvent& ev);

private:
    int32_t sample(const float* logits, int32_t n_vocab, SamplerFunnel* funnel);

    const Model& m_;
    const GenerateOptions& o_;
    GenerateResult& r_;
    StopStrings stops_;
    sampling::Sampler sampler_;
    Utf8Decoder utf8_;
    std::optional<TokenBytes> own_bytes_;  // read from the model when the options give none
    const TokenBytes* bytes_ = nullptr;    // each token's bytes, under a constraint
    Clock::time_point start_;
};

}  // namespace vkllm::model
