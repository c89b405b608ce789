// An intervention judged over a whole text rather than the next token alone: the model's
// distribution at every position before and after the edit compared position by position
// (KL(before || after)), and the perplexity of the text itself under both. Shared by
// vkllm-studio's Activations panel and `vkllm run` / `vkllm perplexity --effect-text`.
//
// Memory: nothing here keeps a position's logits past the forward pass that made them. The
// accumulator folds each pass's rows into O(1) numbers per position (the KL and the next
// token's two log-probabilities), and text_effect_streamed() drives two sessions (the text
// before and after the edit) one forward pass at a time, so a 2K-token text over a 32K
// vocabulary keeps ~2K floats, not 2 x 256 MB of logits. Header-only: both front-ends include
// it (vkllm_app_common's sources are fixed).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm::app {

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

// Takes the logits of the text's positions in order, a block of rows at a time, and keeps per
// position only its KL and the next token's negative log-likelihoods.
class TextEffectAccumulator {
public:
    // Throws std::invalid_argument for an empty vocabulary or a token id outside it.
    TextEffectAccumulator(std::vector<int32_t> tokens, int n_vocab) : tokens_(std::move(tokens)), n_vocab_(n_vocab) {
        if (n_vocab_ <= 0) throw std::invalid_argument("text effect: the vocabulary is empty");
        for (int32_t t : tokens_)
            if (t < 0 || t >= n_vocab_)
                throw std::invalid_argument("text effect: token id " + std::to_string(t) + " is outside the vocabulary of " +
                                            std::to_string(n_vocab_));
        kl_.reserve(tokens_.size());
    }

    int next_position() const { return int(kl_.size()); }
    bool complete() const { return kl_.size() == tokens_.size(); }

    // Rows [n_rows][n_vocab] before and after the edit for positions next_position().. on.
    void add(const float* before, const float* after, size_t n_rows) {
        if (kl_.size() + n_rows > tokens_.size())
            throw std::invalid_argument("text effect: " + std::to_string(kl_.size() + n_rows) + " rows of logits for " +
                                        std::to_string(tokens_.size()) + " tokens");
        const size_t V = size_t(n_vocab_);
        for (size_t r = 0; r < n_rows; ++r) {
            const float* b = before + r * V;
            const float* a = after + r * V;
            const double zb = log_sum_exp(b), za = log_sum_exp(a);
            // KL(p || q) = sum_v p_v (log p_v - log q_v), with log p_v = b_v - zb, log q_v = a_v - za.
            double kl = 0;
            for (size_t v = 0; v < V; ++v) {
                const double lb = double(b[v]) - zb;
                kl += std::exp(lb) * (lb - (double(a[v]) - za));
            }
            const size_t i = kl_.size();
            kl_.push_back(float(std::max(kl, 0.0)));  // rounding can leave a tiny negative
            if (i + 1 < tokens_.size()) {
                const size_t next = size_t(tokens_[i + 1]);
                nll_before_ -= double(b[next]) - zb;
                nll_after_ -= double(a[next]) - za;
            }
        }
    }

    // The positions compared so far (all of them once complete()), the n_moved largest KLs.
    TextEffect finish(int n_moved = 5) const {
        TextEffect e;
        e.positions = int(kl_.size());
        e.kl = kl_;
        double kl_sum = 0;
        for (float k : kl_) {
            kl_sum += k;
            e.max_kl = std::max(e.max_kl, k);
        }
        e.mean_kl = kl_.empty() ? 0.0f : float(kl_sum / double(kl_.size()));
        const size_t scored = kl_.empty() ? 0 : std::min(kl_.size(), tokens_.size() - 1);
        if (scored > 0) {
            e.perplexity_before = std::exp(nll_before_ / double(scored));
            e.perplexity_after = std::exp(nll_after_ / double(scored));
        }
        for (size_t i = 0; i < kl_.size(); ++i) e.moved.push_back({int(i), kl_[i]});
        std::stable_sort(e.moved.begin(), e.moved.end(),
                         [](const PositionShift& x, const PositionShift& y) { return x.kl > y.kl; });
        e.moved.resize(std::min(e.moved.size(), size_t(std::max(n_moved, 0))));
        std::erase_if(e.moved, [](const PositionShift& s) { return s.kl < TextEffect::kNoEffect; });
        return e;
    }

private:
    double log_sum_exp(const float* row) const {
        double mx = row[0];
        for (int v = 1; v < n_vocab_; ++v) mx = std::max(mx, double(row[v]));
        double sum = 0;
        for (int v = 0; v < n_vocab_; ++v) sum += std::exp(double(row[v]) - mx);
        return mx + std::log(sum);
    }

    std::vector<int32_t> tokens_;
    int n_vocab_ = 0;
    std::vector<float> kl_;
    double nll_before_ = 0, nll_after_ = 0;
};

// before and after: logits [tokens.size()][n_vocab] of the same text (Session::eval with
// all_logits), row i predicting tokens[i + 1]. Throws std::invalid_argument on mismatched sizes.
inline TextEffect text_effect(const std::vector<float>& before, const std::vector<float>& after,
                              const std::vector<int32_t>& tokens, int n_vocab, int n_moved = 5) {
    const size_t T = tokens.size();
    if (n_vocab <= 0 || before.size() != T * size_t(n_vocab) || after.size() != before.size())
        throw std::invalid_argument("text_effect: logits of " + std::to_string(before.size()) + " and " +
                                    std::to_string(after.size()) + " values for " + std::to_string(T) +
                                    " tokens of " + std::to_string(n_vocab));
    TextEffectAccumulator acc(tokens, n_vocab);
    acc.add(before.data(), after.data(), T);
    return acc.finish(n_moved);
}

// One side of the comparison: the weight edits in force (each element set to its value, in
// order) and the residual-stream edits of the session that reads the text.
struct InterventionState {
    std::vector<std::pair<WeightRef, float>> weights;
    std::vector<ResidualEdit> residual;
};

// Puts the model's weights in `state`: every edit undone, then the state's made in order. A
// quantised block re-encoded from the same bytes in the same order gets the same bytes, so
// switching back and forth is exact.
inline void set_model_weights(Model& model, const InterventionState& state) {
    model.restore_weights();
    for (const auto& [ref, value] : state.weights) model.set_weight(ref, value);
}

// The text evaluated from position 0 in `before` under `state_before` and in `after` under
// `state_after`, one forward pass (n_batch tokens, the passes a whole-text eval makes, so a
// running-mean residual edit sees the same passes) at a time in each session, the model's
// weights switched between them when the states differ. Each session's probes are off while it
// runs and restored after. Leaves both sessions holding the text and the model's weights in
// `state_after`. The sessions must be two different sessions of `model` with the same n_batch.
// last_before / last_after, when given, receive the last position's logits (the next token).
// Throws std::invalid_argument for an empty text or mismatched sessions, and what
// Session::eval throws (ContextOverflow for a text longer than a session's context).
inline TextEffect text_effect_streamed(Model& model, Session& before, Session& after, const std::vector<int32_t>& tokens,
                                       const InterventionState& state_before, const InterventionState& state_after,
                                       int n_moved = 5, std::vector<float>* last_before = nullptr,
                                       std::vector<float>* last_after = nullptr) {
    if (tokens.empty()) throw std::invalid_argument("text effect: the text has no tokens");
    if (&before == &after) throw std::invalid_argument("text effect: before and after need two sessions");
    if (before.n_batch() != after.n_batch())
        throw std::invalid_argument("text effect: the two sessions' passes differ (n_batch " + std::to_string(before.n_batch()) +
                                    " and " + std::to_string(after.n_batch()) + ")");
    auto same_edit = [](const std::pair<WeightRef, float>& x, const std::pair<WeightRef, float>& y) {
        return x.first.layer == y.first.layer && x.first.tensor == y.first.tensor && x.first.row == y.first.row &&
               x.first.col == y.first.col && x.first.expert == y.first.expert && x.second == y.second;
    };
    const bool switch_weights =
        !std::equal(state_before.weights.begin(), state_before.weights.end(), state_after.weights.begin(),
                    state_after.weights.end(), same_edit);
    // Probes off while the text runs; back on however this returns.
    struct ProbesOff {
        Session& s;
        ProbeConfig saved;
        explicit ProbesOff(Session& session) : s(session), saved(session.probe_config()) { s.set_probes({}); }
        ~ProbesOff() { s.set_probes(saved); }
    } off_before(before), off_after(after);
    before.set_residual_edits(state_before.residual);
    after.set_residual_edits(state_after.residual);
    before.reset();
    after.reset();
    TextEffectAccumulator acc(tokens, model.n_vocab());
    const size_t pass = size_t(before.n_batch()), V = size_t(model.n_vocab());
    set_model_weights(model, state_before);
    for (size_t first = 0; first < tokens.size(); first += pass) {
        const std::vector<int32_t> chunk(tokens.begin() + long(first), tokens.begin() + long(std::min(tokens.size(), first + pass)));
        if (switch_weights && first > 0) set_model_weights(model, state_before);
        const std::vector<float> b = before.eval(chunk, /*all_logits=*/true);
        if (switch_weights) set_model_weights(model, state_after);
        const std::vector<float> a = after.eval(chunk, /*all_logits=*/true);
        acc.add(b.data(), a.data(), chunk.size());
        if (first + pass >= tokens.size()) {
            if (last_before) last_before->assign(b.end() - long(V), b.end());
            if (last_after) last_after->assign(a.end() - long(V), a.end());
        }
    }
    return acc.finish(n_moved);
}

}  // namespace vkllm::app
