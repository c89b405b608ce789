// generate_json (vkllm/json_output.h) and generate_with_grammar (vkllm/grammar.h):
// Session::generate's decode loop with a TokenConstraint (a JsonMatcher or a GbnfMatcher)
// deciding which tokens may be sampled. It drives the session through its public eval().
#include <algorithm>
#include <chrono>

#include "core/top_n.h"
#include "model/stop_strings.h"
#include "sampling/gbnf_matcher.h"
#include "sampling/grammar_impl.h"
#include "sampling/json_matcher.h"
#include "sampling/json_output_impl.h"
#include "sampling/sampler.h"
#include "vkllm/grammar.h"
#include "vkllm/json_output.h"
#include "vkllm/model.h"
#include "vkllm/session.h"
#include "vkllm/utf8.h"

namespace vkllm {

TokenBytes::TokenBytes(const Model& model) {
    const int32_t n = model.n_vocab();
    bytes.resize(size_t(n));
    end_of_generation.resize(size_t(n));
    for (int32_t id = 0; id < n; ++id) {
        end_of_generation[size_t(id)] = model.is_eog(id);
        if (!model.is_control(id)) bytes[size_t(id)] = model.piece(id);
    }
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point from, Clock::time_point to) { return std::chrono::duration<double>(to - from).count(); }

class ConstrainedGeneration {
public:
    // `what`: what the constraint's text is, for errors ("the JSON value").
    ConstrainedGeneration(Session& s, const GenerateOptions& o, sampling::TokenConstraint& matcher, std::string what,
                          const TokenBytes& v, const TokenCallback& cb, GenerateResult& r)
        : s_(s), o_(o), vocab_(v), callback_(cb), r_(r), stops_(o.stop), sampler_(o.sampler), matcher_(matcher),
          what_(std::move(what)), start_(Clock::now()) {}

    void run(const std::vector<int32_t>& prompt) {
        if (prompt.empty()) throw std::invalid_argument("generate needs a prompt of at least one token");
        const int32_t n_vocab = s_.model().n_vocab();
        if (vocab_.bytes.size() != size_t(n_vocab))
            throw std::invalid_argument("the TokenBytes are of another vocabulary (" + std::to_string(vocab_.bytes.size()) +
                                        " tokens, the model has " + std::to_string(n_vocab) + ")");
        r_.n_prompt = int(prompt.size());
        // The longest common prefix with the cache is kept; at least the last prompt token is
        // evaluated, for its logits.
        const std::vector<int32_t>& cached = s_.tokens();
        const auto mismatch = std::mismatch(prompt.begin(), prompt.end(), cached.begin(), cached.end());
        const size_t keep = std::min(size_t(mismatch.first - prompt.begin()), prompt.size() - 1);
        s_.truncate(int(keep));
        std::vector<float> logits = s_.eval(std::vector<int32_t>(prompt.begin() + long(keep), prompt.end()));
        r_.n_prompt_evaluated = int(prompt.size() - keep);
        const Clock::time_point prompt_end = Clock::now();
        r_.prompt_seconds = seconds(start_, prompt_end);
        if (o_.penalize_prompt)
            for (int32_t t : prompt) sampler_.accept(t);
        r_.reason = StopReason::MaxTokens;
        while (o_.max_tokens > 0) {
            int32_t id = 0;
            if (!emit(logits, id)) break;
            logits = s_.eval({id});
        }
        r_.decode_seconds = seconds(prompt_end, Clock::now());
    }

private:
    // A token may follow when its bytes continue the value; an end-of-generation token where
    // the value is complete. A token with no bytes (a control token) is never chosen: it would
    // leave the value where it is.
    bool allowed(int32_t id) const {
        if (vocab_.end_of_generation[size_t(id)]) return matcher_.complete();
        const std::string& b = vocab_.bytes[size_t(id)];
        return !b.empty() && matcher_.accepts(b);
    }

    // As Session::generate's emit: sample, fill the event, run the callback. False when
    // generation ends with this token (r_.reason says why).
    bool emit(const std::vector<float>& logits, int32_t& id) {
        const Model& m = s_.model();
        const int32_t n_vocab = m.n_vocab();
        TokenEvent ev;
        const std::vector<double> log_probs = sampling::log_softmax(logits.data(), n_vocab);
        try {
            ev.id = id = sampler_.sample(logits.data(), n_vocab, [this](int32_t t) { return allowed(t); },
                                         o_.funnel ? &ev.funnel : nullptr);
        } catch (const sampling::SamplingError&) {
            throw std::runtime_error("no token of the vocabulary continues " + what_ + " after " +
                                     std::to_string(r_.tokens.size()) + " generated tokens");
        }
        sampler_.accept(id);
        ev.end_of_generation = vocab_.end_of_generation[size_t(id)];
        if (!ev.end_of_generation) matcher_.feed(vocab_.bytes[size_t(id)]);
        ev.index = int(r_.tokens.size());
        ev.position = s_.n_past();
        ev.piece = m.piece(id);
        ev.logprob = float(log_probs[size_t(id)]);
        for (int32_t t : vkllm::top_n(log_probs.data(), log_probs.size(), size_t(std::max(o_.top_n, 0))))
            ev.top.push_back({t, m.piece(t), float(log_probs[size_t(t)])});
        r_.tokens.push_back(id);
        if (ev.index == 0) r_.first_token_seconds = seconds(start_, Clock::now());

        bool finished = true;
        if (ev.end_of_generation || matcher_.closed()) {
            r_.reason = StopReason::EndOfGeneration;
        } else if (ev.index + 1 >= o_.max_tokens) {
            r_.reason = StopReason::MaxTokens;
        } else if (ev.position >= s_.n_ctx()) {
            r_.reason = StopReason::ContextFull;
            r_.message = "the context of " + std::to_string(s_.n_ctx()) + " tokens is full";
        } else {
            finished = false;
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
        if (callback_ && !callback_(ev) && !finished) {
            r_.reason = StopReason::Callback;
            return false;
        }
        return !finished;
    }

    Session& s_;
    const GenerateOptions& o_;
    const TokenBytes& vocab_;
    const TokenCallback& callback_;
    GenerateResult& r_;
    model::StopStrings stops_;
    sampling::Sampler sampler_;
    sampling::TokenConstraint& matcher_;
    const std::string what_;
    Utf8Decoder utf8_;
    Clock::time_point start_;
};

// Checks the options, runs the loop, and turns errors into the result's reason and message.
GenerateResult generate_constrained(Session& session, const std::vector<int32_t>& prompt, const GenerateOptions& options,
                                    sampling::TokenConstraint& matcher, const std::string& what,
                                    const TokenBytes& vocabulary, const TokenCallback& on_token) {
    GenerateResult r;
    try {
        validate(options.sampler);
        if (options.max_tokens < 0)
            throw std::invalid_argument("max_tokens must be >= 0, got " + std::to_string(options.max_tokens));
        if (options.top_n < 0) throw std::invalid_argument("top_n must be >= 0, got " + std::to_string(options.top_n));
        if (options.draft.session)
            throw std::invalid_argument("speculative decoding (a draft) is not combined with constrained output");
        ConstrainedGeneration(session, options, matcher, what, vocabulary, on_token, r).run(prompt);
    } catch (const ContextOverflow& e) {
        r.reason = StopReason::ContextFull;
        r.message = e.what();
    } catch (const std::exception& e) {
        r.reason = StopReason::Error;
        r.message = e.what();
    }
    return r;
}

}  // namespace

GenerateResult generate_json(Session& session, const std::vector<int32_t>& prompt, const GenerateOptions& options,
                             const JsonGrammar& grammar, const TokenBytes& vocabulary, const TokenCallback& on_token) {
    sampling::JsonMatcher matcher(grammar.impl().nodes);
    return generate_constrained(session, prompt, options, matcher, "the JSON value", vocabulary, on_token);
}

GenerateResult generate_with_grammar(Session& session, const std::vector<int32_t>& prompt,
                                     const GenerateOptions& options, const Grammar& grammar,
                                     const TokenBytes& vocabulary, const TokenCallback& on_token) {
    sampling::GbnfMatcher matcher(grammar.impl().rules);
    return generate_constrained(session, prompt, options, matcher, "the grammar's text", vocabulary, on_token);
}

}  // namespace vkllm
