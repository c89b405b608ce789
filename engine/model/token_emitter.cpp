#include "model/token_emitter.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/top_n.h"
#include "vkllm/model.h"

namespace vkllm::model {

namespace {

double seconds(TokenEmitter::Clock::time_point from, TokenEmitter::Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}

// The top_n most likely tokens under log_probs, most likely first (ties: lower id).
std::vector<TokenAlternative> top_alternatives(const Model& m, const std::vector<double>& log_probs, int top_n) {
    std::vector<TokenAlternative> out;
    for (int32_t id : vkllm::top_n(log_probs.data(), log_probs.size(), size_t(std::max(top_n, 0))))
        out.push_back({id, m.piece(id), float(log_probs[size_t(id)])});
    return out;
}

}  // namespace

void check_generate_options(const GenerateOptions& o, int32_t n_vocab) {
    validate(o.sampler, n_vocab);
    if (o.max_tokens < 0) throw std::invalid_argument("max_tokens must be >= 0, got " + std::to_string(o.max_tokens));
    if (o.top_n < 0) throw std::invalid_argument("top_n must be >= 0, got " + std::to_string(o.top_n));
    if (o.draft.session && o.draft.n_draft < 1)
        throw std::invalid_argument("draft.n_draft must be >= 1, got " + std::to_string(o.draft.n_draft));
    if (o.draft.session && o.constraint.matcher)
        throw std::invalid_argument("speculative decoding (a draft) is not combined with constrained output");
}

TokenEmitter::TokenEmitter(const Model& m, const GenerateOptions& o, GenerateResult& r, Clock::time_point start)
    : m_(m), o_(o), r_(r), stops_(o.stop), sampler_(o.sampler), start_(start) {
    if (!o.constraint.matcher) return;
    if (!o.constraint.vocabulary) own_bytes_.emplace(m);
    bytes_ = o.constraint.vocabulary ? o.constraint.vocabulary : &*own_bytes_;
    const size_t n_vocab = size_t(m.n_vocab());
    if (bytes_->bytes.size() != n_vocab || bytes_->end_of_generation.size() != n_vocab)
        throw std::invalid_argument("the TokenBytes are of another vocabulary (" + std::to_string(bytes_->bytes.size()) +
                                    " tokens, the model has " + std::to_string(n_vocab) + ")");
}

bool TokenEmitter::next(const float* logits, int position, int n_ctx, TokenEvent& ev) {
    const int32_t n_vocab = m_.n_vocab();
    const std::vector<double> log_probs = sampling::log_softmax(logits, n_vocab);
    ev.id = sample(logits, n_vocab, o_.funnel ? &ev.funnel : nullptr);
    sampler_.accept(ev.id);
    ev.index = int(r_.tokens.size());
    ev.position = position;
    ev.piece = m_.piece(ev.id);
    ev.logprob = float(log_probs[size_t(ev.id)]);
    ev.top = top_alternatives(m_, log_probs, o_.top_n);
    ev.end_of_generation = m_.is_eog(ev.id);
    TokenConstraint* matcher = o_.constraint.matcher;
    if (matcher && !ev.end_of_generation) matcher->feed(bytes_->bytes[size_t(ev.id)]);
    r_.tokens.push_back(ev.id);
    if (ev.index == 0) r_.first_token_seconds = seconds(start_, Clock::now());

    // Whether this token is the last is known before the caller's callback for these reasons,
    // so its event can release everything still held.
    bool finished = false;
    if (ev.end_of_generation || (matcher && matcher->closed())) {
        r_.reason = StopReason::EndOfGeneration;
        finished = true;
    } else if (ev.index + 1 >= o_.max_tokens) {
        r_.reason = StopReason::MaxTokens;
        finished = true;
    } else if (position >= n_ctx) {
        r_.reason = StopReason::ContextFull;
        r_.message = "the context of " + std::to_string(n_ctx) + " tokens is full";
        finished = true;
    }
    std::string text = ev.end_of_generation ? std::string() : utf8_.push(ev.piece);
    if (finished) text += utf8_.flush();
    ev.text = stops_.push(text);
    if (stops_.stopped()) {
        r_.reason = StopReason::StopString;
        r_.message.clear();
        finished = true;
    } else if (finished) {
        ev.text += stops_.finish();
    }
    r_.text += ev.text;
    return finished;
}

// The sampler's choice; under a constraint, among the tokens that continue its text.
int32_t TokenEmitter::sample(const float* logits, int32_t n_vocab, SamplerFunnel* funnel) {
    const TokenConstraint* matcher = o_.constraint.matcher;
    if (!matcher) return sampler_.sample(logits, n_vocab, funnel);
    // An end-of-generation token where the text is whole; any other token when its bytes
    // continue it (a control token has none: it would leave the text where it is).
    auto allowed = [this, matcher](int32_t t) {
        if (bytes_->end_of_generation[size_t(t)]) return matcher->complete();
        const std::string& b = bytes_->bytes[size_t(t)];
        return !b.empty() && matcher->accepts(b);
    };
    try {
        return sampler_.sample(logits, n_vocab, allowed, funnel);
    } catch (const sampling::SamplingError&) {
        throw std::runtime_error("no token of the vocabulary continues " + matcher->text_name() + " after " +
                                 std::to_string(r_.tokens.size()) + " generated tokens");
    }
}

}  // namespace vkllm::model
