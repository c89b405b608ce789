// Probes: named observation points of the forward pass, off by default and free when off.
// Every probe describes the last Session::eval (or each step of generate(), through the
// snapshot); positions are absolute positions in the session's context.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vkllm {

// One attention head of one layer, and optionally a tile of its map: query rows at positions
// [query_first, query_first + query_count) and keys at [key_first, key_first + key_count)
// (count 0: every one).
struct AttentionHead {
    int layer = 0;
    int head = 0;
    int query_first = 0, query_count = 0;
    int key_first = 0, key_count = 0;
};

// The largest logit_lens_top_n (the GPU's top-k keeps this many per cell).
inline constexpr int kMaxLensTopN = 16;

struct ProbeConfig {
    // Attention maps of these layers (see AttentionMap).
    std::vector<int> attention_layers;
    // Cap on memory: at most this many query rows are kept per layer per eval (the newest
    // ones: a prompt longer than this keeps its last rows). A map holds
    // n_head * rows * n_key floats.
    int attention_max_rows = 1024;
    // Full maps of single heads (AttentionMap with n_head 1 and head set), under the same row
    // cap, each cut to its tile. Computed a block of query rows at a time on the GPU and copied
    // head by head, so no layers x heads x rows x keys buffer exists anywhere.
    std::vector<AttentionHead> attention_heads;
    // Statistics of every attention layer and head (AttentionSummary), computed on the GPU from
    // the probabilities a block of query rows at a time: a few floats per row leave the GPU.
    bool attention_summary = false;
    // Each query row's attention_top_k most probable keys, per attention layer and head
    // (AttentionTopK; 0: off, at most 16), over every row of the eval.
    int attention_top_k = 0;
    // Each attention layer and head's map max-pooled to at most attention_thumbnail cells a side
    // (AttentionThumbnail; 0: off, at most 256), over every row of the eval.
    int attention_thumbnail = 0;
    // The most bytes of probe results one eval may copy to the host and keep: attention maps
    // (the host rows of each pass and the eval's map), summaries, residual copies, the logit
    // lens and the state probes (traces and mixing maps), counted at the session's largest key
    // count (at least a pass's tokens). Session creation or eval throws
    // std::invalid_argument, naming the probes and their size, when the request could exceed it.
    uint64_t max_bytes = uint64_t(256) << 20;
    // Residual stream per layer: max |x| with token and channel, per-token max, top-k, median.
    bool residual_stats = false;
    int residual_top_k = 8;
    // The whole [n_tokens][n_embd] residual stream after these layers (-1: the embeddings).
    std::vector<int> residual_full_layers;
    // ffn_down's largest |input| and |output| per layer (Yu et al. 2024's super-weight pair).
    bool ffn_down = false;
    // MoE layers: each token's chosen experts and gate weights.
    bool routing = false;
    // Logit lens of these layers: top tokens of softmax(final_norm(x_l) · W_out), computed on
    // the GPU (LogitLensGrid) at the eval's last logit_lens_positions positions (1: the newest
    // only), so only layers x positions x logit_lens_top_n (id, probability) pairs reach the
    // host. logit_lens_top_n: 1..kMaxLensTopN; logit_lens_positions >= 1 (an eval of fewer
    // tokens gives them all); both counted in max_bytes.
    std::vector<int> logit_lens_layers;
    int logit_lens_top_n = 10;
    int logit_lens_positions = 1;
    bool timings = false;      // GPU time per op and per layer (timestamp queries)
    bool expert_load = false;  // MoE layers: tokens and gate weight per expert, summed
    // The recurrent state of state-space (Mamba-1, Mamba-2, also beside attention as in
    // Falcon-H1), RWKV-7 and Gated DeltaNet layers (StateProbe): per
    // layer, head and token the state's norm and the decay. `state`: every such layer;
    // state_layers: these (each must be one). Recomputed on the GPU from the scan's own inputs.
    bool state = false;
    std::vector<int> state_layers;
    // Mamba-2 heads' and Gated DeltaNet value heads' token-to-token mixing maps (AttentionMap of
    // kind StateMixing; tiles as for attention_heads), over positions 0..state_map_positions - 1
    // of the session.
    std::vector<AttentionHead> state_maps;
    int state_map_positions = 1024;
    bool any() const {
        return !attention_layers.empty() || !attention_heads.empty() || attention_summary || attention_top_k > 0 ||
               attention_thumbnail > 0 || residual_stats ||
               !residual_full_layers.empty() || ffn_down || routing || !logit_lens_layers.empty() || timings ||
               expert_load || state || !state_layers.empty() || !state_maps.empty();
    }
};
// The same options under the name the documentation of budgets uses.
using ProbeOptions = ProbeConfig;


// What a map holds: attention probabilities, or a state-space head's implicit mixing weights
// (ProbeConfig::state_maps): the weight M[t][s] with which token s's input enters token t's
// output through the recurrent state. For Mamba-2's head h (its scalar decay dA_r = exp(dt_r A),
// dt_r = softplus(dt + dt_bias) of token r, B and C of the head's group), the dual form of the scan:
//     y_t = sum_{s <= t} M[t][s] x_s (+ D x_t),  M[t][s] = (C_t . B_s) prod_{s < r <= t} dA_r dt_s
// For a Gated DeltaNet value head (decay D_r = exp(g_r), rate beta_r, keys and queries k, q after
// their L2 norm), from a zero state:
//     out_t = sum_{s <= t} M[t][s] v_s,  M[t][s] = scale q_t^T A_t ... A_{s+1} beta_s k_s,
//     A_r = (I - beta_r k_r k_r^T) D_r
// (cpu/ref_state_probe.h derives it).
// Not probabilities: signed, rows do not sum to 1, no sinks. Keys before the first position the
// probe saw of the state (it was turned on after them) hold 0.
enum class MapKind { Attention, StateMixing };

// Attention probabilities of one layer over the eval's query rows (every chunk of a long
// prompt, not only its last; at most attention_max_rows, the newest).
// The key axis is every position 0..newest query position, in position order; keys a query
// cannot see (the future, outside its window or chunk) hold 0. For each head h and row q:
//     sum_k probs[h][q][k] + sink[h][q] == 1
// where sink is the probability mass of the learned sink (gpt-oss), 0 for models without.
struct AttentionMap {
    MapKind kind = MapKind::Attention;
    int layer = 0;
    int n_head = 0;
    int head = -1;              // >= 0: one head's map (ProbeConfig::attention_heads; n_head 1)
    int window = 0;             // > 0: sliding window of this many positions (0: global)
    int chunk = 0;              // > 0: chunked attention
    bool causal = true;
    std::vector<int> query_pos; // [n_query]
    std::vector<int> key_pos;   // [n_key] = 0, 1, ..., query_pos.back()
    std::vector<float> probs;   // [n_head][n_query][n_key]
    std::vector<float> sink;    // [n_head][n_query]; empty when the layer has no sinks
    int n_query() const { return int(query_pos.size()); }
    int n_key() const { return int(key_pos.size()); }
    float at(int head, int query, int key) const {
        return probs[(size_t(head) * query_pos.size() + size_t(query)) * key_pos.size() + size_t(key)];
    }
};

// Statistics of one attention head over the eval's query rows (ProbeConfig::attention_summary),
// each the mean over its `rows` query rows (every row of the eval, not only the newest):
//   entropy        -sum_k p_k ln p_k (nats), the learned sink's probability included
//   sink_mass      the probability of the key at position 0 plus the learned sink's (0 without)
//   mean_distance  sum_k p_k (query position - key position): how far back the head looks
//                  (a bidirectional layer's keys after the query count negative)
//   max_prob       the largest key probability (1: attends to one key)
struct AttentionSummary {
    int layer = 0;
    int head = 0;
    int rows = 0;
    float entropy = 0, sink_mass = 0, mean_distance = 0, max_prob = 0;
};

// The most attended keys of each query row of one head over the eval's rows
// (ProbeConfig::attention_top_k), computed on the GPU from the same probabilities as the maps.
struct AttentionTopK {
    int layer = 0;
    int head = 0;
    int k = 0;
    std::vector<int> query_pos;  // [n_query]
    // [n_query][k]: most probable first, equal probabilities in key-position order; a row that
    // sees fewer than k keys (probability > 0) ends in key -1, probability 0. A learned sink is
    // not a key.
    std::vector<int> key_pos;
    std::vector<float> probs;
    int n_query() const { return int(query_pos.size()); }
};

// One head's map over the eval, max-pooled into square cells of `cell` positions
// (ProbeConfig::attention_thumbnail = S): cell is the smallest power of two that puts the keys
// 0..newest query position into at most S columns, so a long context gives S x S whatever its
// length. Rows cover the eval's query positions from query_first (a multiple of cell):
//   max_prob[r][c] = max p(query q, key k) over the eval's queries q in
//                    [query_first + r cell, query_first + (r + 1) cell) and keys k in
//                    [c cell, (c + 1) cell)
// (0 where no query sees a key there; a learned sink is not a key).
struct AttentionThumbnail {
    int layer = 0;
    int head = 0;
    int cell = 1;
    int query_first = 0;
    int rows = 0, cols = 0;
    std::vector<float> max_prob;  // [rows][cols]
    float at(int r, int c) const { return max_prob[size_t(r) * size_t(cols) + size_t(c)]; }
};

// The residual stream after a layer (layer -1: after the embeddings) over the eval's tokens.
// Massive activations (Sun et al. 2024) show as max_abs far above median_abs.
struct ResidualEntry {
    float value = 0;  // signed
    int token = 0;    // position
    int channel = 0;
};
struct ResidualStat {
    int layer = 0;
    float max_abs = 0;
    int token = 0;     // position of the token holding the max
    int channel = 0;   // hidden dimension holding the max
    float median_abs = 0;
    std::vector<float> token_max_abs;   // [n_tokens] each token's largest |x|
    std::vector<int> token_channel;     // [n_tokens] the channel holding it
    std::vector<ResidualEntry> top;     // the residual_top_k largest |x|, largest first
};
// The whole residual stream of a layer (probe residual_full_layers).
struct ResidualTensor {
    int layer = 0;
    std::vector<int> positions;  // [n_tokens]
    int n_embd = 0;
    std::vector<float> values;   // [n_tokens][n_embd]
};

// ffn_down of a layer: its input is the gated hidden state act(gate) * up, its output what the
// FFN adds to the residual stream. A super weight W_down[out_channel, in_channel] shows as a
// spike in both on the same token (Yu et al. 2024). MoE layers: over the shared expert when
// there is one (expert = -1), and per routed expert (expert = e) for the pairs routed to it.
struct FfnDownStat {
    int layer = 0;
    int expert = -1;
    float in_max_abs = 0;
    int in_token = 0, in_channel = 0;
    float in_median_abs = 0;
    float out_max_abs = 0;
    int out_token = 0, out_channel = 0;
    float out_median_abs = 0;
};

// One MoE layer's routing of the eval's tokens.
struct RoutingProbe {
    int layer = 0;
    int top_k = 0;
    std::vector<int> positions;      // [n_tokens]
    std::vector<int32_t> experts;    // [n_tokens][top_k]
    std::vector<float> weights;      // [n_tokens][top_k] gate weights as applied
};

struct LensToken {
    int32_t id = 0;
    std::string text;  // the token's piece
    float p = 0;
};
// final_norm(x_layer) · W_out (and the final soft-cap) at the newest position, softmaxed. The
// last layer's lens is the model's own next-token distribution. The newest column of the
// LogitLensGrid.
struct LogitLens {
    int layer = 0;
    int position = 0;
    std::vector<LensToken> top;  // logit_lens_top_n most probable, most probable first
};

// The logit lens as a layers x positions grid (ProbeConfig::logit_lens_layers, rows, by
// logit_lens_positions, columns): cell (row, col) holds the top_k most probable next tokens of
// softmax(final_norm(x) · W_out) for the residual x after layer layers[row] at position
// positions[col], most probable first (equal probabilities in id order). Softmax and top-k run
// on the GPU; a token whose probability underflows to 0 is never listed, and a cell with fewer
// than top_k such tokens ends in id -1, p 0.
struct LogitLensGrid {
    std::vector<int> layers;     // [rows]
    std::vector<int> positions;  // [cols], increasing: the eval's newest positions
    int top_k = 0;
    std::vector<LensToken> cells;  // [rows][cols][top_k]
    int rows() const { return int(layers.size()); }
    int cols() const { return int(positions.size()); }
    bool empty() const { return cells.empty(); }
    const LensToken* cell(int row, int col) const {
        return &cells[(size_t(row) * positions.size() + size_t(col)) * size_t(top_k)];
    }
};

// GPU time of one op, in recorded order.
struct OpTiming {
    std::string op;   // op family: matmul, attention, norm, ...
    int layer = -1;   // -1: outside the layers (embeddings, output)
    double ms = 0;    // GPU milliseconds
    int count = 0;    // dispatches it covers
};
// Sums of timings by op family (first-seen order).
std::vector<OpTiming> timings_by_op(const std::vector<OpTiming>& timings);
// Sums by layer: [n_layer + 1] where the last entry is what runs outside the layers.
std::vector<double> timings_by_layer(const std::vector<OpTiming>& timings, int n_layer);

// Routing of one MoE layer: per expert, the (token, slot) pairs routed to it and the sum of
// their gate weights.
struct ExpertLoad {
    int layer = 0;
    std::vector<float> tokens;       // [n_expert]
    std::vector<float> weight_sum;   // [n_expert]
};

// The recurrent state of one head of a state-space or RWKV-7 layer over the eval's tokens
// (ProbeConfig::state, state_layers), recomputed on the GPU from the scan's own inputs:
//   norm[t]   the Frobenius norm of the head's state after token t: Mamba-2 head h's
//             [head_dim][d_state] block, RWKV-7's [head_size][head_size] matrix, Mamba-1's whole
//             [d_inner][d_state] state (Mamba-1 has one head: its decay is per channel)
//   decay[t]  the factor the state is multiplied by at token t (its forget gate): Mamba-2
//             exp(dt A), dt = softplus(dt + dt_bias); Mamba-1 the mean over channels and states
//             of exp(dt_c A[c][n]); RWKV-7 the mean of w over the head's channels
struct StateProbe {
    int layer = 0;
    int head = 0;
    std::string kind;            // "ssd" (Mamba-2), "selective_scan" (Mamba-1), "wkv7" (RWKV-7),
                                 // "delta_net" (Gated DeltaNet)
    std::vector<int> positions;  // [n_tokens]
    std::vector<float> norm;     // [n_tokens]
    std::vector<float> decay;    // [n_tokens]
};

struct ProbeResults {
    std::vector<AttentionMap> attention;  // attention_layers' maps, then attention_heads'
    std::vector<AttentionSummary> attention_summary;  // by layer, then head
    std::vector<AttentionTopK> attention_top_k;       // by layer, then head
    std::vector<AttentionThumbnail> attention_thumbnails;  // by layer, then head
    std::vector<ResidualStat> residual;          // layer -1 (embeddings), 0, 1, ...
    std::vector<ResidualTensor> residual_full;
    std::vector<FfnDownStat> ffn_down;
    std::vector<RoutingProbe> routing;
    std::vector<LogitLens> logit_lens;   // the grid's newest column, one per lens layer
    LogitLensGrid logit_lens_grid;
    // Timings of the eval's forward passes in recorded order; dispatches and barriers are
    // counted for every pass (also without the timings probe).
    std::vector<OpTiming> timings;
    int dispatches = 0, barriers = 0, passes = 0;
    // Expert load summed over the session's prompt passes (evals of several tokens) and decode
    // steps (evals of one token) since it began or was reset.
    std::vector<ExpertLoad> expert_load_prefill, expert_load_decode;
    std::vector<ExpertLoad> expert_load_step;  // of the last forward pass alone
    std::vector<StateProbe> state;             // by layer, then head
    std::vector<AttentionMap> state_maps;      // ProbeConfig::state_maps' maps, in its order
};

}  // namespace vkllm
