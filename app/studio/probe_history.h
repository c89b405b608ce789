// The probes of a whole conversation, stitched together from the per-step probes a Session
// gives: the prompt's full query x key maps with every generated token's row appended, the
// residual stream's per-token maxima, each token's routing. Rows are keyed by position, so
// dropping the tail (edit, regenerate) is dropping rows at or after a position.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vkllm/probe.h"

namespace vkllm::studio {

// One layer's attention over the conversation: [n_head][n_query][n_key], key axis 0..max query
// (a causal layer) or 0..the last token (an encoder's bidirectional layer).
struct AttentionHistory {
    int layer = 0;
    int n_head = 0;
    int window = 0, chunk = 0;
    bool causal = true;
    bool has_sinks = false;
    std::vector<int> query_pos;
    int n_key = 0;
    // rows[q] is [n_head][n_key_at_q] with n_key_at_q = query_pos[q] + 1 for a causal row (it
    // never needs more keys than its own position), every key for a bidirectional one; at(h,
    // q, k) reads 0 beyond it.
    std::vector<std::vector<float>> rows;
    std::vector<std::vector<float>> sink;  // [n_query][n_head] when has_sinks
    float at(int head, int q, int key) const;
    float sink_at(int head, int q) const;
};

// One layer's residual stream over the conversation.
struct ResidualHistory {
    int layer = 0;
    std::vector<int> positions;
    std::vector<float> token_max_abs;  // per position
    std::vector<int> token_channel;
    float max_abs = 0;                 // the largest over every step kept
    int max_token = 0, max_channel = 0;
    float median_abs = 0;              // of the step that held the max
};

struct RoutingHistory {
    int layer = 0;
    int top_k = 0;
    std::vector<int> positions;
    std::vector<int32_t> experts;  // [n][top_k]
    std::vector<float> weights;    // [n][top_k]
    std::vector<bool> prompt;      // [n] the token was part of a prompt (not generated)
};

// One head of a state-space or RWKV-7 layer over the conversation (vkllm/probe.h StateProbe):
// its state's norm and its decay at every kept position.
struct StateHistory {
    int layer = 0, head = 0;
    std::string kind;  // mamba2, mamba1, rwkv7
    std::vector<int> positions;
    std::vector<float> norm, decay;
};

// One evaluation's probes as the Session gave them: the export writes these, eval by eval, the
// way `vkllm probe` does (app/common/probe_json.h).
struct ProbeEval {
    ProbeResults results;
    int first_pos = 0, n_tokens = 0;
};
// The eval without its tokens at positions >= n: their attention rows (and keys), residual
// maxima, routing and lens rows go; each layer's maximum is taken again over the tokens left.
// What cannot be split by token is kept as it was: a layer's median |x|, the ffn_down spikes
// (dropped only when they sat at a dropped position), timings and expert loads.
ProbeEval truncated_eval(const ProbeEval& e, int n);

struct ProbeHistory {
    std::vector<AttentionHistory> attention;
    std::vector<ResidualHistory> residual;          // layer -1, 0, 1, ...
    std::vector<ResidualTensor> residual_full;      // rows by position, every step's
    std::vector<FfnDownStat> ffn_down;              // the largest spikes seen, per (layer, expert)
    std::vector<RoutingHistory> routing;
    std::vector<LogitLens> logit_lens;              // of the newest step
    std::vector<LogitLens> lens_history;            // every step's positions (its grid's columns, or its newest)
    std::vector<OpTiming> timings;                  // of the newest step
    std::vector<OpTiming> prompt_timings;           // of the newest prompt step (more than one token)
    std::vector<ExpertLoad> expert_load_prefill, expert_load_decode, expert_load_step;
    std::vector<StateHistory> state;                // by layer, then head
    // Mamba-2 heads' token-to-token mixing maps (MapKind::StateMixing), one entry per map with
    // n_head 1, by layer then head: drawn as the attention maps are.
    std::vector<AttentionHistory> state_maps;
    std::vector<int> state_map_heads;               // the head of each state_maps entry
    // Every kept eval, in order (shared: the worker publishes a copy of the history per token).
    std::vector<std::shared_ptr<const ProbeEval>> evals;
    int steps = 0;

    // Adds one eval's probes. `first_pos` is the position of the eval's first token, `n_tokens`
    // how many it ran; rows at or after first_pos are replaced. A prompt eval has n_tokens > 1
    // or is the first eval after a user turn (`is_prompt`).
    void add_step(const ProbeResults& step, int first_pos, int n_tokens, bool is_prompt);
    // Forgets everything at positions >= n (the session was truncated to n tokens).
    void truncate(int n);
    void clear() { *this = ProbeHistory{}; }

    // The history in the engine's own shapes (what `vkllm probe` serialises): attention maps
    // over every kept row, residual stats over every kept token, routing of every token.
    ProbeResults as_results() const;

    const AttentionHistory* attention_layer(int layer) const;
    const RoutingHistory* routing_layer(int layer) const;
    const AttentionHistory* state_map(int layer, int head) const;
};

}  // namespace vkllm::studio
