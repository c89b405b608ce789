// Token sampling from logits: repetition penalties, top-k, top-p (nucleus), min-p,
// temperature, then a draw from a self-contained PRNG, so a seed gives the same tokens on
// every platform and standard library.
#pragma once

#include <cstdint>
#include <deque>
#include <stdexcept>
#include <vector>

namespace vkllm::sampling {

struct SamplingError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// xoshiro256** (Blackman & Vigna 2018), its state seeded from splitmix64(seed).
class Rng {
public:
    explicit Rng(uint64_t seed = 0);
    uint64_t next();
    double uniform();  // [0, 1) with 53 random bits
private:
    uint64_t s_[4];
};

struct SamplerParams {
    float temperature = 0.8f;       // <= 0: greedy (argmax after penalties, lowest index on ties)
    int top_k = 40;                 // <= 0 or >= n_vocab: off
    float top_p = 0.95f;            // >= 1: off
    float min_p = 0.05f;            // <= 0: off
    float repeat_penalty = 1.0f;    // 1: off; > 0
    float presence_penalty = 0.0f;  // subtracted once from every token in the window
    float frequency_penalty = 0.0f; // subtracted per occurrence in the window
    int repeat_last_n = 64;         // window of accepted tokens penalised; 0: off, < 0: all
    uint64_t seed = 0;
};

// A candidate token with its logit after penalties and its final sampling probability.
struct TokenProb {
    int32_t token;
    float logit;
    float prob;
};

// Per token, in this order:
//  1. penalties on tokens accepted within the last repeat_last_n (llama.cpp's rule): a token
//     seen c times gets logit / repeat_penalty if logit > 0 else logit * repeat_penalty, then
//     - c * frequency_penalty - presence_penalty
//  2. top-k: the k highest logits (ties toward the lower token id)
//  3. top-p: softmax (temperature 1) over what is left; the shortest prefix, by descending
//     probability, whose cumulative probability reaches top_p (at least one token)
//  4. min-p: drop tokens whose probability is below min_p times the largest
//  5. temperature: logits / temperature, softmax over the survivors, one draw
// NaN and -inf logits are never chosen.
class Sampler {
public:
    explicit Sampler(SamplerParams params);

    // Chooses a token from logits [n_vocab]. Does not record it: call accept() for that.
    // Throws SamplingError when n_vocab <= 0 or no logit is finite.
    int32_t sample(const float* logits, int32_t n_vocab);
    // Records a token (prompt or generated) for the repetition penalties.
    void accept(int32_t token);
    // Forgets accepted tokens and restarts the random sequence from the seed.
    void reset();

    const SamplerParams& params() const { return params_; }
    // The candidates the last sample() drew from, by descending probability (greedy: the
    // chosen token alone, probability 1).
    const std::vector<TokenProb>& last_candidates() const { return candidates_; }

private:
    void apply_penalties(std::vector<float>& logits) const;

    SamplerParams params_;
    Rng rng_;
    std::deque<int32_t> history_;  // accepted tokens, oldest first, at most repeat_last_n
    std::vector<TokenProb> candidates_;
};

}  // namespace vkllm::sampling
