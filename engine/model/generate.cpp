// Session::generate: prefix reuse, prompt evaluation, then sample -> event -> callback -> eval
// until a stop, with or without a token constraint (JSON, JSON Schema and GBNF output sample
// through it). Every exception becomes a StopReason (see vkllm/generate.h).
#include <algorithm>
#include <chrono>
#include <numeric>
#include <optional>
#include <string>

#include "model/model_internal.h"
#include "model/session_impl.h"
#include "model/speculative.h"
#include "model/token_emitter.h"
#include "vkllm/json_output.h"
#include "vkllm/model.h"
#include "vkllm/session.h"
#include "vkllm/utf8.h"

namespace vkllm {

const char* to_string(StopReason r) {
    switch (r) {
        case StopReason::EndOfGeneration: return "end_of_generation";
        case StopReason::StopString: return "stop_string";
        case StopReason::MaxTokens: return "max_tokens";
        case StopReason::ContextFull: return "context_full";
        case StopReason::Callback: return "callback";
        case StopReason::Cancelled: return "cancelled";
        case StopReason::Error: return "error";
    }
    return "unknown";
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point from, Clock::time_point to) { return std::chrono::duration<double>(to - from).count(); }

}  // namespace

// One generate() call: its options, the text filters and the result being filled.
class Session::Impl::Generation {
public:
    Generation(Session::Impl& s, const GenerateOptions& o, const TokenCallback& cb, GenerateResult& r)
        : s_(s), o_(o), callback_(cb), r_(r), start_(Clock::now()), emitter_(s.model, o, r, start_) {}

    void run(const std::vector<int32_t>& prompt) {
        if (prompt.empty()) throw std::invalid_argument("generate needs a prompt of at least one token");
        r_.n_prompt = int(prompt.size());
        const int n_ctx = s_.forward->n_ctx();
        if (prompt.size() > size_t(n_ctx)) {
            r_.reason = StopReason::ContextFull;
            r_.message = "the prompt is " + std::to_string(prompt.size()) + " tokens, longer than the context of " +
                         std::to_string(n_ctx) + " tokens";
            return;
        }
        if (!evaluate_prompt(prompt)) return;
        if (o_.penalize_prompt) emitter_.accept(prompt);
        if (o_.draft.session) decode_speculative();
        else decode();
    }

private:
    // Keeps the longest common prefix with the cache, evaluates the rest (at least the last
    // prompt token, for its logits). False when cancelled.
    bool evaluate_prompt(const std::vector<int32_t>& prompt) {
        const auto mismatch = std::mismatch(prompt.begin(), prompt.end(), s_.tokens.begin(), s_.tokens.end());
        const size_t keep = std::min(size_t(mismatch.first - prompt.begin()), prompt.size() - 1);
        const int n_suffix = int(prompt.size() - keep);
        s_.check_vocabulary(prompt.data() + keep, size_t(n_suffix));  // before the cache changes
        const int recomputed = s_.truncate(int(keep));
        logits_.assign(size_t(s_.model.n_vocab()), 0.0f);
        const bool done = s_.run(prompt.data() + keep, size_t(n_suffix), false, logits_.data(), &s_.cancel_requested);
        s_.publish_step();
        r_.n_prompt_evaluated = recomputed + n_suffix;
        prompt_end_ = Clock::now();
        r_.prompt_seconds = seconds(start_, prompt_end_);
        if (!done) r_.reason = StopReason::Cancelled;
        return done;
    }

    // Plain decoding: sample, emit, evaluate the token, repeat.
    void decode() {
        r_.reason = StopReason::MaxTokens;
        while (o_.max_tokens > 0) {
            int32_t id = 0;
            if (!emit(logits_.data(), int(s_.tokens.size()), id)) break;
            if (!s_.run(&id, 1, false, logits_.data(), &s_.cancel_requested)) {
                r_.reason = StopReason::Cancelled;
                break;
            }
            s_.publish_step();
        }
        r_.decode_seconds = seconds(prompt_end_, Clock::now());
    }

    // Speculative decoding (see DraftOptions): the pending token (emitted, not yet evaluated)
    // and the draft's proposals go through the target in one pass with every row's logits; the
    // rows are sampled in order as plain decoding would, while the target agrees with the draft.
    void decode_speculative() {
        r_.reason = StopReason::MaxTokens;
        model::Drafter drafter(*o_.draft.session, o_.draft.n_draft);
        const int n_ctx = s_.forward->n_ctx();
        const size_t n_vocab = size_t(s_.model.n_vocab());
        std::vector<float> rows;
        int32_t pending = 0;
        bool more = o_.max_tokens > 0 && emit(logits_.data(), int(s_.tokens.size()), pending);
        while (more) {
            const int base = int(s_.tokens.size());
            // Room for the proposals: the token budget (the token after the last accepted one is
            // the target's own) and the context (the pending token and the proposals are evaluated).
            const int k = std::min(o_.max_tokens - int(r_.tokens.size()) - 1, n_ctx - base - 1);
            std::vector<int32_t> batch{pending};
            if (k > 0) {
                const std::vector<int32_t> proposed = drafter.propose(s_.tokens, pending, k, s_.cancel_requested);
                batch.insert(batch.end(), proposed.begin(), proposed.end());
                r_.draft_proposed += int(proposed.size());
            }
            rows.resize(batch.size() * n_vocab);
            if (!s_.run(batch.data(), batch.size(), true, rows.data(), &s_.cancel_requested)) {
                r_.reason = StopReason::Cancelled;
                break;
            }
            s_.publish_step();
            size_t row = 0;
            for (;; ++row) {
                int32_t id = 0;
                more = emit(rows.data() + row * n_vocab, base + 1 + int(row), id);
                const bool agrees = row + 1 < batch.size() && id == batch[row + 1];
                r_.draft_accepted += agrees;
                if (!more) break;
                if (!agrees) {
                    pending = id;
                    break;
                }
            }
            // The cache keeps the pending token and the accepted proposals (rows 0..row).
            if (more && base + 1 + int(row) < int(s_.tokens.size())) {
                s_.truncate(base + 1 + int(row));
                s_.publish_step();
            }
        }
        // As after plain decoding: the prompt and every generated token but the last.
        const int kept = r_.n_prompt + std::max(int(r_.tokens.size()) - 1, 0);
        if (kept < int(s_.tokens.size())) {
            s_.truncate(kept);
            s_.publish_step();
        }
        r_.decode_seconds = seconds(prompt_end_, Clock::now());
    }

    // Samples a token from `logits` (the row of the token before it, which sits at `position`
    // - 1), fills and publishes its event and runs the callback. False when generation ends with
    // this token (or before it, when cancelled): r_.reason says why.
    bool emit(const float* logits, int position, int32_t& id) {
        if (s_.cancel_requested.load()) {
            r_.reason = StopReason::Cancelled;
            return false;
        }
        TokenEvent ev;
        const bool finished = emitter_.next(logits, position, s_.forward->n_ctx(), ev);
        id = ev.id;
        publish(ev);
        if (callback_ && !callback_(ev) && !finished) {
            r_.reason = StopReason::Callback;
            return false;
        }
        return !finished;
    }

    void publish(const TokenEvent& ev) {
        std::lock_guard<std::mutex> lock(s_.mutex);
        s_.published.generated.push_back(ev);
        s_.published.generated_text += ev.text;
        s_.published.step = ev.index + 1;
    }

    Session::Impl& s_;
    const GenerateOptions& o_;
    const TokenCallback& callback_;
    GenerateResult& r_;
    std::vector<float> logits_;  // [n_vocab] of the last token evaluated
    Clock::time_point start_, prompt_end_;
    model::TokenEmitter emitter_;
};

GenerateResult Session::generate(const std::vector<int32_t>& prompt, const GenerateOptions& options,
                                 const TokenCallback& on_token) {
    Impl& s = *impl_;
    s.cancel_requested.store(false);
    {
        std::lock_guard<std::mutex> lock(s.mutex);
        s.published.generated.clear();
        s.published.generated_text.clear();
        s.published.step = 0;
        s.published.generating = true;
    }
    GenerateResult r;
    try {
        model::check_generate_options(options, s.model.n_vocab());
        if (options.draft.session == this)
            throw std::invalid_argument("the draft session must be another Session than the one generating");
        if (options.draft.session) check_draft_vocabulary(s.model, options.draft.session->model());
        Impl::Generation(s, options, on_token, r).run(prompt);
    } catch (const ContextOverflow& e) {
        r.reason = StopReason::ContextFull;
        r.message = e.what();
    } catch (const std::exception& e) {
        r.reason = StopReason::Error;
        r.message = e.what();
    } catch (...) {
        r.reason = StopReason::Error;
        r.message = "an unknown exception";
    }
    std::lock_guard<std::mutex> lock(s.mutex);
    s.published.generating = false;
    return r;
}

}  // namespace vkllm
