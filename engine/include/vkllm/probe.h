// Probes: named observation points of the forward pass, off by default and free when off.
#pragma once

#include <string>
#include <vector>

namespace vkllm {

struct ProbeConfig {
    std::vector<int> attention_layers;  // layers whose attention probabilities are recorded
    bool residual_stats = false;        // per-layer residual-stream statistics
    bool timings = false;               // GPU time per op family (timestamp queries)
    bool expert_load = false;           // MoE layers: tokens and gate weight per expert
    bool any() const { return !attention_layers.empty() || residual_stats || timings || expert_load; }
};

// Attention probabilities of the newest token of a step, every head.
struct AttentionProbe {
    int layer = 0;
    int n_head = 0;
    int n_kv = 0;              // keys attended over (positions 0..n_kv-1 for a global layer)
    std::vector<int> key_pos;  // [n_kv] position of each key
    std::vector<float> probs;  // [n_head, n_kv]; each row sums to 1
};

// The residual stream after a layer (layer -1: the embeddings), over the step's tokens.
// Massive activations (Sun et al. 2024) show as max_abs far above median_abs.
struct ResidualStat {
    int layer = 0;
    float max_abs = 0;
    int token = 0;     // position of the token holding the max
    int channel = 0;   // hidden dimension holding the max
    float median_abs = 0;
};

struct OpTiming {
    std::string op;   // op family: matmul, attention, rms_norm, ...
    double ms = 0;    // summed GPU milliseconds in the step
    int count = 0;    // dispatches
};

// Routing of one MoE layer: per expert, the (token, slot) pairs routed to it and the sum of
// their gate weights.
struct ExpertLoad {
    int layer = 0;
    std::vector<float> tokens;       // [n_expert]
    std::vector<float> weight_sum;   // [n_expert]
};

struct ProbeResults {
    std::vector<AttentionProbe> attention;
    std::vector<ResidualStat> residual;
    std::vector<OpTiming> timings;
    // Expert load summed over the session's prompt passes (evals of several tokens) and decode
    // steps (evals of one token) since it began or was reset.
    std::vector<ExpertLoad> expert_load_prefill, expert_load_decode;
    std::vector<ExpertLoad> expert_load_step;  // of the last forward pass alone
};

}  // namespace vkllm
