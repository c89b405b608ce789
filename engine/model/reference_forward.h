// The CPU reference forward: the same ModelSpec walked with engine/cpu's plain reference ops,
// reading the weights straight from the mapped GGUF file. It is the oracle the GPU forward is
// tested against (logits and attention probabilities), independent of llama.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "cpu/ref_ops.h"
#include "model/spec.h"
#include "vkllm/session.h"

namespace vkllm::gguf { class File; }

namespace vkllm::model {

class ReferenceForward {
public:
    // round_activations: quantised matmuls see activations rounded as llama.cpp's CPU backend
    // rounds them (cpu::round_activations), as the GPU forward does by default.
    ReferenceForward(const gguf::File& file, const ModelSpec& spec, int n_ctx, bool round_activations = true);

    // Appends `tokens` at positions n_past().. and returns their logits [n_tokens, n_vocab].
    // probs_layer >= 0 records that layer's attention probabilities of the last token
    // [n_head, n_past()] in *probs.
    std::vector<float> eval(const std::vector<int32_t>& tokens, int probs_layer = -1, std::vector<float>* probs = nullptr);
    int n_past() const { return n_past_; }

    // What the last eval() saw besides its logits (the oracle of the probes).
    std::vector<int> record_attention_layers;       // set: layers whose every query row is kept
    std::map<int, std::vector<float>> attention;    // layer -> [n_tokens, n_head, n_past()] probabilities
    std::vector<std::vector<float>> residual;       // [n_layer + 1][n_tokens, n_embd]: after the
                                                    // embeddings, then each layer (after the edits)
    std::vector<std::vector<float>> ffn_in, ffn_out;  // per layer: ffn_down's input [n_tokens, n_ff]
                                                      // and output [n_tokens, n_embd]
    // Residual-stream edits as vkllm::Session applies them (and their Mean sums start over).
    void set_residual_edits(const std::vector<ResidualEdit>& edits);

private:
    const gguf::File& file_;
    const ModelSpec& spec_;
    int n_ctx_;
    int n_past_ = 0;
    bool round_activations_;
    void matmul(const std::string& name, const float* x, float* y, int n_tokens) const;
    std::vector<std::vector<float>> k_, v_;  // per layer [n_ctx, n_head_kv * head_dim]
    // Edits by layer + 1, in the given order, and their Mean (sum, count).
    std::map<int, std::vector<cpu::ChannelEdit>> edits_;
    std::map<int, std::vector<double>> edit_state_;
    void apply_edits(int layer, float* x, int n_tokens);
};

}  // namespace vkllm::model
