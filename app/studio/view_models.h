// View-models: the plain numbers each panel draws, computed from the conversation's probes
// and the model's architecture. Pure functions (no ImGui, no GPU), so tests can compare what a
// panel shows with the engine's probes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "probe_history.h"
#include "vkllm/generate.h"
#include "vkllm/model_info.h"

namespace vkllm::studio {

// ---- Attention ----
struct HeadStats {
    int layer = 0, head = 0;
    float entropy = 0;           // mean over query rows of -sum p ln p (nats)
    float first_token_mass = 0;  // mean over query rows of p(key 0)
    float mean_distance = 0;     // mean over query rows of sum p * |query - key|
    float sink_mass = 0;         // mean learned-sink mass (0 without sinks)
};
struct AttentionLayerView {
    int layer = 0;
    int n_head = 0;
    std::string kind;            // "global", "sliding_window", ... (ModelInfo)
    int window = 0;              // > 0: the band to draw
    bool global = true;          // no window and no chunk
    bool sinks = false;
    int n_query = 0, n_key = 0;
    std::vector<HeadStats> heads;
    // The heads' numbers are the GPU's summaries (ProbeConfig::attention_summary: no maps; the
    // first-token mass includes a learned sink's, and the distance is signed), not the maps'.
    bool from_summary = false;
};
struct AttentionView {
    std::vector<AttentionLayerView> layers;
};
HeadStats head_stats(const AttentionHistory& a, int head);
// From the maps when the history has them, else from every kept eval's summaries (means
// weighted by their rows).
AttentionView attention_view(const ProbeHistory& h, const ModelInfo& info);
// The query x key map of one head, [n_query][n_key] row-major, log10 when `log_scale` (floored
// at 1e-6).
std::vector<float> attention_matrix(const AttentionHistory& a, int head, bool log_scale);
// How much every later query attends to `key_pos`, per layer and head: the mean over queries
// at positions > key_pos (a bidirectional layer: every other query; the query at key_pos
// itself excluded); [layer][head].
std::vector<std::vector<float>> attention_to_key(const ProbeHistory& h, int key_pos);
// The linked text view: what the query at position `query_pos` attends, per key position
// (n_key values), for one head or, with head < 0, the mean over the layer's heads. Empty when
// that position has no query row in the map.
std::vector<float> attention_from_query(const AttentionHistory& a, int head, int query_pos);
// ALiBi (Jais): the slope m of `head` in `layer` (0 without ALiBi, or out of range), and the
// bias it adds to the head's attention logits before the softmax, -m * |query - key| per query
// row and key position, [query_pos.size()][n_key] row-major; keys a causal query cannot see
// (after its own position) are -infinity, as the mask makes them.
float alibi_slope(const ModelInfo& info, int layer, int head);
std::vector<float> alibi_bias_map(const std::vector<int>& query_pos, int n_key, float slope, bool causal);

// ---- Activations ----
struct ActivationRow {
    int layer = 0;               // -1: after the embeddings
    float max_abs = 0;
    int token = 0, channel = 0;
    float median_abs = 0;
    float ratio = 0;             // max_abs / median_abs (0 when the median is 0)
    bool massive = false;        // Sun et al. 2024: max_abs > 100 and ratio > 1000
};
std::vector<ActivationRow> activation_rows(const ProbeHistory& h);
bool is_massive(float max_abs, float median_abs);

// A super-weight candidate (Yu et al. 2024): ffn_down's input spike on channel `col` and its
// output spike on channel `row` on the same token; W_down[row, col] is the suspect.
struct SuperWeightCandidate {
    int layer = 0, expert = -1;
    int token = 0;
    int row = 0, col = 0;        // W_down[row, col]
    float in_max_abs = 0, out_max_abs = 0;
    float in_ratio = 0, out_ratio = 0;
    float score = 0;             // in_ratio * out_ratio, candidates sorted by it
};
std::vector<SuperWeightCandidate> super_weight_candidates(const std::vector<FfnDownStat>& stats);

// ---- Experts ----
struct ExpertLayerView {
    int layer = 0;
    int n_expert = 0;
    bool shared_expert = false;
    std::vector<int> prompt_tokens, generated_tokens;  // routed (token, slot) pairs per expert
    std::vector<float> prompt_weight, generated_weight;
    std::vector<int> rolling_tokens;                   // the last `window` tokens' pairs
    // Balance of all tokens (prompt + generated)
    float cv = 0;          // coefficient of variation of the per-expert counts
    float max_over_mean = 0;
    float entropy = 0;     // of the load distribution, normalised to [0, 1] by ln(n_expert)
    int idle = 0;          // experts with no token
};
struct ExpertBalance { float cv = 0, max_over_mean = 0, entropy = 0; int idle = 0; };
ExpertBalance balance(const std::vector<float>& load);
std::vector<ExpertLayerView> expert_view(const ProbeHistory& h, const ModelInfo& info, int rolling_window);
// Which experts a token went to at each MoE layer: [layer index in h.routing][top_k].
std::vector<std::vector<int32_t>> token_path(const ProbeHistory& h, int position);

// ---- Logit lens ----
struct LensRow {
    int layer = 0;
    std::vector<LensToken> top;
};
// The lens at `position` (-1: the newest step's), one row per layer.
std::vector<LensRow> lens_rows(const ProbeHistory& h, int position = -1);
// Positions the lens was computed at, ascending.
std::vector<int> lens_positions(const ProbeHistory& h);
// The lens as a layers x positions grid over the history (every position it was computed at):
// cell (row, col) holds layer layers[row]'s most probable tokens at positions[col], most probable
// first; empty where that layer was not read there.
struct LensGrid {
    std::vector<int> layers, positions;      // ascending
    std::vector<std::vector<LensToken>> cells;  // [rows][cols]
    int rows() const { return int(layers.size()); }
    int cols() const { return int(positions.size()); }
    const std::vector<LensToken>& at(int row, int col) const { return cells[size_t(row) * positions.size() + size_t(col)]; }
    // The top token's probability of every cell, [rows][cols] (0 where empty): what the map shades.
    std::vector<float> top_probs() const;
};
LensGrid lens_grid(const ProbeHistory& h);

// ---- Architecture ----
struct ArchitectureBlock {
    int layer = 0;
    std::string norm;        // "pre", "post", "sandwich"
    std::string attention;   // "global 4 heads (GQA 2:1) d=16", "sliding window 32", "MLA latent 32"
    std::string ffn;         // "dense SwiGLU 256", "MoE 8 experts top-2 + shared"
    std::string attention_kind, ffn_kind;
    int window = 0;
    uint64_t kv_bytes_per_token = 0;
    uint64_t weight_bytes = 0;
    std::string weight_types;  // "F32" or "Q8_0, F32"
};
std::vector<ArchitectureBlock> architecture_blocks(const ModelInfo& info);

// ---- Telemetry ----
struct OpRow { std::string op; double ms = 0; int count = 0; };
struct TelemetryView {
    double prompt_tokens_per_s = 0, decode_tokens_per_s = 0, first_token_ms = 0;
    std::vector<OpRow> by_op;         // newest step
    std::vector<double> by_layer;     // newest step, last entry outside the layers
    double step_ms = 0;
};
TelemetryView telemetry_view(const ProbeHistory& h, const GenerateResult& last, int n_layer);

// Surprisal of a token in bits: -log2 p.
float surprisal_bits(float logprob);

}  // namespace vkllm::studio
