// The `vkllm probe` JSON document, written by both front-ends (`vkllm probe -o` and
// `vkllm-studio --export`): the model, the tokens and every probe of a prompt evaluation and
// the evaluations after it. Field names are a contract (docs/api.md describes them):
//   model       the ModelInfo: arch, name, n_layer, n_embd, n_vocab, layers (attention, ffn)
//   tokens      [{position, id, text, generated}] every token evaluated, in order
//   attention   [{layer, head, n_head, window, chunk, causal, query_pos[], key_pos[],
//                 probs[head][query][key] or null, probs_npy, sink[head][query] or null}]:
//                 every eval's rows in order, the key axis padded to positions 0..the largest
//                 key seen (a tile: its own key positions). head -1 and n_head the layer's
//                 heads for a whole layer; head h and n_head 1 for one head. probs_npy, when
//                 not null, names the NumPy file beside the document that holds probs (float32
//                 [n_head][query][key]) and probs is null
//   attention_summary [{layer, head, rows, entropy, sink_mass, mean_distance, max_prob}]: per
//                 layer and head, each the mean over the `rows` query rows of every eval
//                 (vkllm/probe.h AttentionSummary)
//   attention_top_k [{eval, k, query_pos[], heads[{layer, head}], keys[head][query][k] or null,
//                 probs[head][query][k] or null, keys_npy, probs_npy}]: per eval, each query
//                 row's k most probable keys of every listed head (vkllm/probe.h AttentionTopK:
//                 key -1, probability 0 past a row's visible keys); keys_npy and probs_npy, when
//                 not null, name NumPy files (float32 [head][query][k]) holding them instead
//   attention_thumbnails [{eval, cell, query_first, rows, cols, heads[{layer, head}],
//                 max_prob[head][row][col] or null, max_prob_npy}]: per eval, every listed
//                 head's map max-pooled into cells of `cell` positions (AttentionThumbnail)
//   residual    [{eval, layer, max_abs, position, channel, median_abs, token_max_abs[],
//                 token_channel[], top[{value, position, channel}]}] per eval (eval 0: the
//                 prompt, eval i: the i-th evaluation after it)
//   ffn_down    [{eval, layer, expert, in_max_abs, in_position, in_channel, in_median_abs,
//                 out_max_abs, out_position, out_channel, out_median_abs}] per eval
//   routing     [{layer, top_k, positions[], experts[token][k], weights[token][k]}]
//   logit_lens  [{eval, layer, position, top[{id, text, p}]}]: each eval's newest position
//   logit_lens_grid [{eval, layers[], positions[], top_k, ids[layer][position][k],
//                 probs[layer][position][k], text[layer][position]}]: per eval, the lens of
//                 every lens layer at the eval's newest positions (vkllm/probe.h LogitLensGrid;
//                 id -1, p 0 past a cell's tokens of probability > 0); text is each cell's most
//                 probable token's piece
//   timings     {passes, dispatches, barriers, total_ms, by_op[{op, ms, count}], by_layer[ms]}
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkllm/model_info.h"
#include "vkllm/probe.h"

namespace vkllm::app {

// The "model" object: the ModelInfo's architecture, layer by layer.
nlohmann::json model_json(const ModelInfo& info);

// One row of "tokens".
struct DocumentToken {
    int32_t id = 0;
    std::string text;        // the token's piece
    bool generated = false;  // sampled by the front-end rather than part of a prompt
};

// Large tensors beside the document: given a name ("attention-L3-H5"), a shape and the values
// (row-major), writes them and returns the file name the document refers to them by.
using SidecarWriter = std::function<std::string(const std::string& name, const std::vector<uint64_t>& shape,
                                                const std::vector<float>& values)>;

// A NumPy .npy file (format 1.0, little-endian float32, C order) of these values.
std::string npy_bytes(const std::vector<uint64_t>& shape, const std::vector<float>& values);

// Gathers the probes of consecutive evaluations (add them in order) into the document.
class ProbeDocument {
public:
    // `eval`: 0 for the prompt, i for the i-th evaluation after it.
    void add(const ProbeResults& r, int eval);
    // With a sidecar, attention maps of at least sidecar_min_values probabilities go to it.
    nlohmann::json to_json(const ModelInfo& info, const std::vector<DocumentToken>& tokens,
                           const SidecarWriter& sidecar = {}, uint64_t sidecar_min_values = 0) const;

private:
    // One layer's (or one head's) attention rows over the evals, each row's keys by position.
    struct AttentionRows {
        int head = -1, key_first = 0, n_key_seen = 0;  // single heads: keys as the maps give them
        int n_head = 0, window = 0, chunk = 0;
        bool causal = true, has_sink = false;
        std::vector<int> query_pos;
        std::vector<std::vector<std::vector<float>>> probs;  // [head][query][key position]
        std::vector<std::vector<float>> sink;                // [head][query]
        void add(const AttentionMap& m);
        nlohmann::json to_json(int layer, const SidecarWriter& sidecar, uint64_t sidecar_min_values) const;
    };
    std::map<std::pair<int, int>, AttentionRows> attention_;  // by layer, then head (-1: the layer's)
    struct SummarySums {
        double entropy = 0, sink_mass = 0, mean_distance = 0, max_prob = 0;
        int rows = 0;
    };
    std::map<std::pair<int, int>, SummarySums> summary_;  // by layer and head
    nlohmann::json residual_ = nlohmann::json::array(), ffn_down_ = nlohmann::json::array(),
                   logit_lens_ = nlohmann::json::array(), logit_lens_grid_ = nlohmann::json::array();
    std::map<int, nlohmann::json> routing_;  // by layer
    // Top keys and thumbnails of each eval, as the probes gave them (written in to_json, where
    // the sidecar is known).
    struct Detail {
        int eval = 0;
        std::vector<AttentionTopK> top_k;
        std::vector<AttentionThumbnail> thumbnails;
    };
    std::vector<Detail> detail_;
    nlohmann::json detail_json(const SidecarWriter& sidecar, uint64_t sidecar_min_values, const char* field) const;
    std::vector<OpTiming> timings_;
    int passes_ = 0, dispatches_ = 0, barriers_ = 0;
};

// The document as text: token pieces may be parts of a UTF-8 character, whose invalid bytes
// become U+FFFD.
std::string dump_document(const nlohmann::json& doc);

}  // namespace vkllm::app
