// Token sampling from logits: a per-token bias, repetition penalties, top-k, top-p (nucleus), min-p,
// temperature, then a draw from a self-contained PRNG, so a seed gives the same tokens on
// every platform and standard library. The parameters and the funnel record are the public
// ones (vkllm/generate.h).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <stdexcept>
#include <vector>

#include "core/xoshiro.h"
#include "vkllm/generate.h"

namespace vkllm::sampling {

struct SamplingError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The sampler's draws: xoshiro256** seeded from splitmix64(seed) (core/xoshiro.h).
using Rng = Xoshiro256;

using SamplerParams = vkllm::SamplerParams;

// A candidate token with its logit after penalties and its final sampling probability.
struct TokenProb {
    int32_t token;
    float logit;
    float prob;
};

// Natural log of softmax(logits) in double: the model's own distribution. NaN logits get -inf;
// when some logits are +inf, those tokens share the whole mass equally.
// Throws SamplingError when n_vocab <= 0 or no logit is usable (all NaN or -inf).
std::vector<double> log_softmax(const float* logits, int32_t n_vocab);

// Per token, in this order (llama.cpp's rules; see vkllm::SamplerParams):
//  0. logit_bias added (-100: the token is banned, its logit -inf)
//  1. penalties on tokens accepted within the last repeat_last_n
//  2. top-k: the k highest logits (ties toward the lower token id)
//  3. top-p: softmax (temperature 1) over what is left; the shortest prefix, by descending
//     probability, whose cumulative probability reaches top_p (at least one token)
//  4. min-p: drop tokens whose probability is below min_p times the largest
//  5. temperature: logits / temperature, softmax over the survivors, one draw
// temperature <= 0 is greedy: the argmax after the bias and penalties (lowest id on ties);
// top-k, top-p and min-p are not applied then. NaN and -inf logits are never chosen.
class Sampler {
public:
    // Throws std::invalid_argument for parameters out of range (vkllm::validate).
    explicit Sampler(SamplerParams params);

    // Chooses a token from logits [n_vocab]. Does not record it: call accept() for that.
    // funnel: when given, filled with every stage's survivors (count and mass under
    // softmax(logits)); in greedy mode the filter stages show the penalties' survivors
    // unchanged and the temperature stage the argmax alone.
    // Throws SamplingError when n_vocab <= 0, no logit is finite or a logit_bias id is not below
    // n_vocab.
    int32_t sample(const float* logits, int32_t n_vocab, SamplerFunnel* funnel = nullptr);
    // Constrained sampling: as sample(), among the tokens `allowed` accepts. Candidates are
    // asked in descending order of their logit after penalties, and the asking stops at the
    // first allowed one when greedy, else at top_k allowed ones (the whole vocabulary when
    // top_k is off); top-p, min-p and temperature then apply to those. So a constraint that
    // agrees with the model costs a few calls. Throws SamplingError when no token is allowed.
    int32_t sample(const float* logits, int32_t n_vocab, const std::function<bool(int32_t)>& allowed,
                   SamplerFunnel* funnel = nullptr);
    // Records a token (prompt or generated) for the repetition penalties.
    void accept(int32_t token);
    // Forgets accepted tokens and restarts the random sequence from the seed.
    void reset();

    const SamplerParams& params() const { return params_; }
    // The candidates the last sample() drew from, by descending probability (greedy: the
    // chosen token alone, probability 1).
    const std::vector<TokenProb>& last_candidates() const { return candidates_; }

private:
    void apply_bias(std::vector<float>& logits) const;
    void apply_penalties(std::vector<float>& logits) const;
    int32_t sample_among(const float* logits, int32_t n_vocab, const std::function<bool(int32_t)>* allowed,
                         SamplerFunnel* funnel);

    SamplerParams params_;
    Rng rng_;
    std::deque<int32_t> history_;  // accepted tokens, oldest first, at most repeat_last_n
    std::vector<TokenProb> candidates_;
};

}  // namespace vkllm::sampling
