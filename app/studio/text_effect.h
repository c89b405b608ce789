// An intervention judged over a whole text rather than the next token alone: the model's
// distribution at every position of the conversation before and after the edit compared
// position by position, and the perplexity of the text itself under both. Pure (no GPU, no
// ImGui), so tests check the arithmetic.
#pragma once

#include <cstdint>
#include <vector>

namespace vkllm::studio {

struct PositionShift {
    int position = 0;  // the prediction made at this position (of the token after it)
    float kl = 0;      // KL(before || after), nats
};

struct TextEffect {
    int positions = 0;             // predictions compared (every token of the text)
    std::vector<float> kl;         // [positions] KL(before || after) at each position, nats
    float mean_kl = 0, max_kl = 0;
    // exp of the mean negative log-likelihood of tokens 1..n-1 given those before them (0 with
    // fewer than two tokens).
    double perplexity_before = 0, perplexity_after = 0;
    std::vector<PositionShift> moved;  // the positions whose KL is largest, largest first
    // Every position's KL below kNoEffect: the edit changes nothing the text can show.
    static constexpr float kNoEffect = 1e-6f;
    bool no_effect() const { return max_kl < kNoEffect; }
};

// before and after: logits [tokens.size()][n_vocab] of the same text (Session::eval with
// all_logits), row i predicting tokens[i + 1]. Throws std::invalid_argument on mismatched sizes.
TextEffect text_effect(const std::vector<float>& before, const std::vector<float>& after,
                       const std::vector<int32_t>& tokens, int n_vocab, int n_moved = 5);

}  // namespace vkllm::studio
