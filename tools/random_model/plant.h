// A planted super weight (Yu et al. 2024): one ffn_down element that, with a gate/up channel made
// to fire on the BOS token, writes a massive activation (Sun et al. 2024) into the residual
// stream. README.md ("Planted super weights") explains the construction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vkllm::random_model {

struct PlantedSuperWeight {
    int layer = 0;
    int64_t row = 0;   // hidden (output) channel of ffn_down: the massive-activation channel
    int64_t col = 0;   // FFN (input) channel of ffn_down
    int expert = -1;   // MoE layers: the expert holding it (-1: expert 0)
};

// Parses "LAYER:ROW:COL" or "LAYER:ROW:COL:EXPERT". Throws ConfigError.
PlantedSuperWeight parse_planted_super_weight(const std::string& text);

// The constants of the construction (README.md), public so tests can state what they expect.
struct PlantConstants {
    static constexpr float marker = 8.0f;       // token_embd[:, m]: +marker for BOS, -marker otherwise
    static constexpr float gate_gain = 8.0f;    // added to ffn_gate[col, m] and ffn_up[col, m]
    static constexpr float router_gain = 8.0f;  // added to ffn_gate_inp[expert, m] (MoE)
    static constexpr float super_weight = 4.0f; // ffn_down[row, col]
};

// The hidden channel the plant uses to mark the BOS token: half the width away from `row`.
int64_t plant_marker_channel(const PlantedSuperWeight& p, int64_t n_embd);

// Everything apply_plant needs besides the tensor.
struct PlantContext {
    PlantedSuperWeight plant;
    int64_t n_embd = 0;
    int32_t bos = -1;
    bool moe_layer = false;  // the planted layer has experts
};

// Changes the initial values of tensor `name` (dims in ggml order) if the plant touches it.
void apply_plant(const PlantContext& ctx, const std::string& name, const std::vector<uint64_t>& dims,
                 std::vector<float>& values);

}  // namespace vkllm::random_model
