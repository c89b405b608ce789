// Continuous batching of generations over a BatchSession's slots (vkllm/batch.h): requests
// start in free slots, and every step() is one forward pass that decodes one token for each
// generating slot and evaluates the next chunk of each joining prompt beside them (at most
// prompt_tokens_per_step prompt tokens, so the decoding slots keep stepping while a long prompt
// joins). Each request keeps its own sampler, penalties, stop strings, logit_bias, token
// constraint, alternatives (top_n) and token budget, and produces the TokenEvents and
// GenerateResult that Session::generate would for the same prompt and options (the tokens are
// the same under greedy sampling up to near-ties, which a batched matmul's rounding can tip).
// A slot keeps its tokens after a request: the next request in it keeps their longest common
// prefix with its prompt. Speculative decoding (a draft) is refused: it needs a Session.
// Single-threaded: start(), step() and cancel() are called from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "vkllm/generate.h"

namespace vkllm {

class BatchSession;
class JsonGrammar;
class Grammar;

// A matcher for GenerateOptions::constraint, one per request: output that is JSON of the
// grammar (vkllm/json_output.h) or text of the GBNF grammar (vkllm/grammar.h).
std::unique_ptr<TokenConstraint> make_constraint(const JsonGrammar& grammar);
std::unique_ptr<TokenConstraint> make_constraint(const Grammar& grammar);

struct BatchRequest {
    std::vector<int32_t> prompt;  // at least one token
    GenerateOptions options;      // draft must be empty; a constraint's matcher lives until the request ends
    TokenCallback on_token;       // called by step() for each token; false stops (StopReason::Callback)
};

class BatchGenerator {
public:
    // prompt_tokens_per_step: prompt tokens evaluated per step across joining requests; 0: what
    // n_batch leaves beside one token per slot.
    explicit BatchGenerator(BatchSession& batch, int prompt_tokens_per_step = 0);
    ~BatchGenerator();

    // Starts a request in a free slot, the one whose tokens share the longest prefix with the
    // prompt; returns it, or -1 when every slot is busy. Throws std::invalid_argument for an
    // empty prompt, options out of range or a draft. A prompt longer than the context finishes
    // at the next step() with StopReason::ContextFull.
    int start(BatchRequest request);

    struct Finished {
        int slot = 0;
        GenerateResult result;
    };
    // One forward pass over the busy slots (none: nothing runs); calls their callbacks and
    // returns the requests that ended (their slots are free again), in slot order.
    std::vector<Finished> step();

    // Ends the request in `slot` at the next step() with StopReason::Cancelled.
    void cancel(int slot);

    bool busy(int slot) const;
    int active() const;      // busy slots
    int n_slots() const;
    uint64_t steps() const;  // forward passes run so far
    uint64_t tokens_in_steps() const;  // tokens they evaluated (prompt chunks and decoded tokens)

private:
    struct Slot;
    BatchSession& batch_;
    int prompt_budget_;
    std::vector<std::unique_ptr<Slot>> slots_;
    uint64_t started_ = 0, steps_ = 0, step_tokens_ = 0;
};

}  // namespace vkllm
