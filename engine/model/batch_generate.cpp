// BatchGenerator: requests over a BatchSession's slots, stepped together (vkllm/batch_generate.h).
// Each slot runs the state machine of Session::generate's plain decoding: its prompt's suffix
// (after the prefix kept from the slot's last request) in chunks, then sample -> event ->
// callback -> evaluate, through the same TokenEmitter.
#include "vkllm/batch_generate.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include "model/token_emitter.h"
#include "sampling/gbnf_matcher.h"
#include "sampling/grammar_impl.h"
#include "sampling/json_matcher.h"
#include "sampling/json_output_impl.h"
#include "vkllm/batch.h"
#include "vkllm/grammar.h"
#include "vkllm/json_output.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {

std::unique_ptr<TokenConstraint> make_constraint(const JsonGrammar& grammar) {
    return std::make_unique<sampling::JsonMatcher>(grammar.impl().nodes);
}

std::unique_ptr<TokenConstraint> make_constraint(const Grammar& grammar) {
    return std::make_unique<sampling::GbnfMatcher>(grammar.impl().rules);
}

namespace {
using Clock = std::chrono::steady_clock;
double seconds(Clock::time_point from, Clock::time_point to) { return std::chrono::duration<double>(to - from).count(); }
}  // namespace

// One request in its slot.
struct BatchGenerator::Slot {
    Slot(const Model& m, BatchRequest r, uint64_t order)
        : request(std::move(r)), start(Clock::now()), emitter(m, request.options, result, start), order(order) {}

    BatchRequest request;
    GenerateResult result;
    Clock::time_point start, prompt_end;
    model::TokenEmitter emitter;
    uint64_t order;               // start order: earlier prompts get the prompt budget first
    std::vector<int32_t> pending;  // prompt tokens not yet evaluated, or the sampled token to evaluate
    bool decoding = false;         // pending is the sampled token (else the prompt's rest)
    bool cancelled = false;
    bool done = false;             // finished before a pass (result says why)
};

BatchGenerator::BatchGenerator(BatchSession& batch, int prompt_tokens_per_step)
    : batch_(batch),
      prompt_budget_(prompt_tokens_per_step > 0 ? prompt_tokens_per_step
                                                : std::max(batch.n_batch() - batch.n_slots(), 1)),
      slots_(size_t(batch.n_slots())) {}

BatchGenerator::~BatchGenerator() = default;

int BatchGenerator::start(BatchRequest request) {
    const Model& m = batch_.model();
    if (request.prompt.empty()) throw std::invalid_argument("generate needs a prompt of at least one token");
    if (request.options.draft.session)
        throw std::invalid_argument("speculative decoding (a draft) is not available in batched generation");
    model::check_generate_options(request.options, m.n_vocab());
    for (int32_t id : request.prompt)
        if (id < 0 || id >= m.n_vocab())
            throw std::invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                                        std::to_string(m.n_vocab() - 1) + ")");
    // The free slot whose tokens share the longest prefix with the prompt.
    int best = -1;
    size_t best_prefix = 0;
    for (int i = 0; i < n_slots(); ++i) {
        if (slots_[size_t(i)]) continue;
        const size_t p = batch_.common_prefix(i, request.prompt);
        if (best < 0 || p > best_prefix) best = i, best_prefix = p;
    }
    if (best < 0) return -1;
    auto slot = std::make_unique<Slot>(m, std::move(request), started_++);
    const std::vector<int32_t>& prompt = slot->request.prompt;
    slot->result.n_prompt = int(prompt.size());
    if (prompt.size() > size_t(batch_.n_ctx())) {
        slot->result.reason = StopReason::ContextFull;
        slot->result.message = "the prompt is " + std::to_string(prompt.size()) + " tokens, longer than the context of " +
                               std::to_string(batch_.n_ctx()) + " tokens";
        slot->done = true;
    } else {
        // At least the last prompt token is evaluated, for its logits.
        const size_t keep = std::min(best_prefix, prompt.size() - 1);
        const int recomputed = batch_.truncate(best, int(keep));
        slot->result.n_prompt_evaluated = recomputed + int(prompt.size() - keep);
        slot->pending.assign(prompt.begin() + std::ptrdiff_t(keep), prompt.end());
        if (slot->request.options.penalize_prompt) slot->emitter.accept(prompt);
    }
    slots_[size_t(best)] = std::move(slot);
    return best;
}

void BatchGenerator::cancel(int slot) {
    if (slot >= 0 && slot < n_slots() && slots_[size_t(slot)]) slots_[size_t(slot)]->cancelled = true;
}

std::vector<BatchGenerator::Finished> BatchGenerator::step() {
    std::vector<Finished> finished;
    auto finish = [&](int i) {
        Slot& s = *slots_[size_t(i)];
        if (s.decoding) s.result.decode_seconds = seconds(s.prompt_end, Clock::now());
        finished.push_back({i, std::move(s.result)});
        slots_[size_t(i)].reset();
    };
    // Requests that ended between steps.
    for (int i = 0; i < n_slots(); ++i) {
        Slot* s = slots_[size_t(i)].get();
        if (!s) continue;
        if (s->cancelled) {
            s->result.reason = StopReason::Cancelled;
            s->result.message.clear();
        }
        if (s->cancelled || s->done) finish(i);
    }

    // This pass: a token for every decoding slot, then prompt chunks within the budget, the
    // earliest request first.
    std::vector<BatchInput> inputs;
    std::vector<int> order;
    for (int i = 0; i < n_slots(); ++i)
        if (slots_[size_t(i)]) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return slots_[size_t(a)]->order < slots_[size_t(b)]->order; });
    int budget = prompt_budget_;
    std::vector<size_t> taken(size_t(n_slots()), 0);
    for (int i : order) {
        Slot& s = *slots_[size_t(i)];
        size_t n = s.pending.size();
        if (!s.decoding) {
            if (budget <= 0) continue;
            n = std::min(n, size_t(budget));
            budget -= int(n);
        }
        taken[size_t(i)] = n;
        inputs.push_back({i, std::vector<int32_t>(s.pending.begin(), s.pending.begin() + std::ptrdiff_t(n))});
    }
    std::sort(inputs.begin(), inputs.end(), [](const BatchInput& a, const BatchInput& b) { return a.slot < b.slot; });
    if (inputs.empty()) return finished;

    std::vector<std::vector<float>> logits;
    try {
        logits = batch_.step(inputs);
    } catch (const std::exception& e) {
        // The pass failed for all of them (a non-finite logit, a device error): each ends with it.
        for (const BatchInput& in : inputs) {
            slots_[size_t(in.slot)]->result.reason = StopReason::Error;
            slots_[size_t(in.slot)]->result.message = e.what();
            finish(in.slot);
        }
        return finished;
    }
    ++steps_;
    for (size_t k = 0; k < inputs.size(); ++k) {
        const int i = inputs[k].slot;
        Slot& s = *slots_[size_t(i)];
        step_tokens_ += inputs[k].tokens.size();
        s.pending.erase(s.pending.begin(), s.pending.begin() + std::ptrdiff_t(taken[size_t(i)]));
        if (!s.pending.empty()) continue;  // more of its prompt to come
        if (!s.decoding) {
            s.prompt_end = Clock::now();
            s.result.prompt_seconds = seconds(s.start, s.prompt_end);
            s.decoding = true;
            if (s.request.options.max_tokens == 0) {
                s.result.reason = StopReason::MaxTokens;
                finish(i);
                continue;
            }
        }
        try {
            TokenEvent ev;
            const bool last = s.emitter.next(logits[k].data(), int(batch_.tokens(i).size()), batch_.n_ctx(), ev);
            const bool go_on = !s.request.on_token || s.request.on_token(ev);
            if (last) {
                finish(i);
            } else if (!go_on) {
                s.result.reason = StopReason::Callback;
                finish(i);
            } else {
                s.pending = {ev.id};
            }
        } catch (const std::exception& e) {
            s.result.reason = StopReason::Error;
            s.result.message = e.what();
            finish(i);
        }
    }
    std::sort(finished.begin(), finished.end(), [](const Finished& a, const Finished& b) { return a.slot < b.slot; });
    return finished;
}

bool BatchGenerator::busy(int slot) const { return slot >= 0 && slot < n_slots() && slots_[size_t(slot)]; }

int BatchGenerator::active() const {
    int n = 0;
    for (const auto& s : slots_) n += s != nullptr;
    return n;
}

int BatchGenerator::n_slots() const { return int(slots_.size()); }
uint64_t BatchGenerator::steps() const { return steps_; }
uint64_t BatchGenerator::tokens_in_steps() const { return step_tokens_; }

}  // namespace vkllm
