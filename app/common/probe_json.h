// The `vkllm probe` JSON document, written by both front-ends (`vkllm probe -o` and
// `vkllm-studio --export`): the model, the tokens and every probe of a prompt evaluation and
// the evaluations after it. Field names are a contract (docs/api.md describes them):
//   model       the ModelInfo: arch, name, n_layer, n_embd, n_vocab, layers (attention, ffn)
//   tokens      [{position, id, text, generated}] every token evaluated, in order
//   attention   [{layer, n_head, window, chunk, causal, query_pos[], key_pos[],
//                 probs[head][query][key], sink[head][query] or null}]: every eval's rows in
//                 order, the key axis padded to positions 0..the largest key seen
//   residual    [{eval, layer, max_abs, position, channel, median_abs, token_max_abs[],
//                 token_channel[], top[{value, position, channel}]}] per eval (eval 0: the
//                 prompt, eval i: the i-th evaluation after it)
//   ffn_down    [{eval, layer, expert, in_max_abs, in_position, in_channel, in_median_abs,
//                 out_max_abs, out_position, out_channel, out_median_abs}] per eval
//   routing     [{layer, top_k, positions[], experts[token][k], weights[token][k]}]
//   logit_lens  [{eval, layer, position, top[{id, text, p}]}]: each eval's newest position
//   timings     {passes, dispatches, barriers, total_ms, by_op[{op, ms, count}], by_layer[ms]}
#pragma once

#include <cstdint>
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

// Gathers the probes of consecutive evaluations (add them in order) into the document.
class ProbeDocument {
public:
    // `eval`: 0 for the prompt, i for the i-th evaluation after it.
    void add(const ProbeResults& r, int eval);
    nlohmann::json to_json(const ModelInfo& info, const std::vector<DocumentToken>& tokens) const;

private:
    // One layer's attention rows over the evals, each row's keys by position.
    struct AttentionRows {
        int n_head = 0, window = 0, chunk = 0;
        bool causal = true, has_sink = false;
        std::vector<int> query_pos;
        std::vector<std::vector<std::vector<float>>> probs;  // [head][query][key position]
        std::vector<std::vector<float>> sink;                // [head][query]
        void add(const AttentionMap& m);
        nlohmann::json to_json(int layer) const;
    };
    std::map<int, AttentionRows> attention_;  // by layer
    nlohmann::json residual_ = nlohmann::json::array(), ffn_down_ = nlohmann::json::array(),
                   logit_lens_ = nlohmann::json::array();
    std::map<int, nlohmann::json> routing_;  // by layer
    std::vector<OpTiming> timings_;
    int passes_ = 0, dispatches_ = 0, barriers_ = 0;
};

// The document as text: token pieces may be parts of a UTF-8 character, whose invalid bytes
// become U+FFFD.
std::string dump_document(const nlohmann::json& doc);

}  // namespace vkllm::app
