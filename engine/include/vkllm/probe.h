// Probes: named observation points of the forward pass, off by default and free when off.
#pragma once

#include <string>
#include <vector>

namespace vkllm {

struct ProbeConfig {
    std::vector<int> attention_layers;  // layers whose attention probabilities are recorded
    bool residual_stats = false;        // per-layer residual-stream statistics
    bool timings = false;               // GPU time per op family (timestamp queries)
    bool any() const { return !attention_layers.empty() || residual_stats || timings; }
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

struct ProbeResults {
    std::vector<AttentionProbe> attention;
    std::vector<ResidualStat> residual;
    std::vector<OpTiming> timings;
};

}  // namespace vkllm
