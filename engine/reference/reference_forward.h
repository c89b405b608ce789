// The CPU reference forward: the same ModelSpec walked with engine/cpu's plain reference ops,
// reading the weights straight from the mapped GGUF file. It is the oracle the GPU forward is
// tested against (logits, attention probabilities and everything the probes report),
// independent of llama.cpp.
//
// It covers the layouts the zoo uses and their neighbours, LFM2's short-convolution layers,
// Mamba-2 mixers (alone, or beside attention as Falcon-H1's) and Gated DeltaNet mixers with gated
// attention (Qwen3.5): pre-norm and sandwich-norm blocks
// (Llama, Gemma 2/3: embedding scale, QK-norm, per-layer sliding windows and RoPE bases,
// attention and final soft-caps, GeGLU), biases, learned sinks, mixture-of-experts FFNs
// (softmax / sigmoid gating, renormalised top-k, group-limited routing, selection bias, shared
// experts; Mixtral, DeepSeek) and DeepSeek's multi-head latent attention, which it runs in the
// plain (unabsorbed) textbook form: per-head keys and values are expanded from the cached latent,
// so it checks the GPU's absorbed form rather than repeating it. Anything else in a spec
// (fused projections, post-norm placements, plain FFNs, Llama 4's NoPE temperature / L2 norm /
// weighted expert inputs, gpt-oss's clamped SwiGLU) is a ModelError naming the feature. An RWKV-7
// spec is walked by Rwkv7ReferenceForward (reference_forward_rwkv.h), to which eval() hands the
// tokens (logits only: no attention probabilities, residuals or edits; its quantised matmuls'
// activations are always rounded as llama.cpp's CPU backend rounds them).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cpu/ref_ops.h"
#include "model/spec.h"
#include "vkllm/session.h"

namespace vkllm::gguf { class File; }

namespace vkllm::model {

class Rwkv7ReferenceForward;

class ReferenceForward {
public:
    // round_activations: quantised matmuls see activations rounded as llama.cpp's CPU backend
    // rounds them (cpu::round_activations), as the GPU forward does by default, and a plain GELU
    // MLP goes through ggml's fp16 GELU table. (Not modelled: that table in GeGLU, and MLA's
    // absorbed matmuls, which the reference does not run; compare those with rounding off.)
    // cache: keys and values are rounded as they enter a cache of that type (F16: to fp16; Q8_0:
    // to ggml's 8-bit blocks of 32 along each row); F32 and Auto keep them exact.
    ReferenceForward(const gguf::File& file, const ModelSpec& spec, int n_ctx, bool round_activations = true,
                     KvCacheType cache = KvCacheType::F32);
    ReferenceForward(ReferenceForward&&) noexcept;
    ~ReferenceForward();

    // Appends `tokens` at positions n_past().. and returns their logits [n_tokens, n_vocab].
    // probs_layer >= 0 records that layer's attention probabilities of the last token
    // [n_head, n_past()] in *probs.
    std::vector<float> eval(const std::vector<int32_t>& tokens, int probs_layer = -1, std::vector<float>* probs = nullptr);
    int n_past() const { return n_past_; }

    // What the last eval() saw besides its logits (the oracle of the probes).
    std::vector<int> record_attention_layers;       // set: layers whose every query row is kept
    std::map<int, std::vector<float>> attention;    // layer -> [n_tokens, n_head, n_past()] probabilities
    std::map<int, std::vector<float>> attention_sink;  // layers with learned sinks: [n_tokens, n_head]
                                                       // the sink's probability (rows + sink sum to 1)
    std::vector<std::vector<float>> residual;       // [n_layer + 1][n_tokens, n_embd]: after the
                                                    // embeddings, then each layer (after the edits)
    // Per layer, ffn_down's input [n_tokens, n_ff] and what the block adds to the residual stream
    // [n_tokens, n_embd] (after a sandwich post-norm, as the probe reports it). MoE layers: those
    // of the shared expert (empty without one).
    std::vector<std::vector<float>> ffn_in, ffn_out;
    // MoE layers, per (token, slot) pair p = token * top_k + slot: the expert's down-projection
    // input [pairs, n_ff_expert] and output before its gate weight [pairs, n_embd]; empty for
    // dense layers.
    std::vector<std::vector<float>> expert_in, expert_out;
    struct Routing {
        int top_k = 0;
        std::vector<int32_t> experts;  // [n_tokens, top_k]
        std::vector<float> weights;    // [n_tokens, top_k], as applied
    };
    std::map<int, Routing> routing;  // MoE layer -> the routing of the eval's tokens

    // Residual-stream edits as vkllm::Session applies them (and their Mean sums start over).
    void set_residual_edits(const std::vector<ResidualEdit>& edits);

private:
    const gguf::File& file_;
    const ModelSpec& spec_;
    int n_ctx_;
    int n_past_ = 0;
    bool round_activations_;
    KvCacheType cache_;
    std::unique_ptr<Rwkv7ReferenceForward> rwkv_;  // an RWKV-7 spec's walk, else null
    // Rounds `rows` rows of n values at p as the cache stores them.
    void store_in_cache(float* p, size_t rows, size_t n) const;
    // Per layer, the cached keys and values of every position so far: [n_ctx, n_head_kv * head_dim]
    // and [n_ctx, n_head_kv * head_dim_v]; MLA layers cache the normalised latent and the rotated
    // shared key [n_ctx, kv_lora_rank + qk_rope] in k_ (v_ unused).
    std::vector<std::vector<float>> k_, v_;
    // Per LFM2 short-convolution layer, its conv state [n_embd][l_cache - 1] (the last products
    // B * u); per Mamba-2 or Gated DeltaNet mixer, its conv state [channels][d_conv - 1] and its
    // SSM or delta-rule state [n_head][head_dim][d_state]: carried from eval to eval; empty for
    // other layers.
    std::vector<std::vector<float>> conv_, ssm_;
    // Edits by layer + 1, in the given order, and their Mean (sum, count).
    std::map<int, std::vector<cpu::ChannelEdit>> edits_;
    std::map<int, std::vector<double>> edit_state_;

    // Per eval: the tokens' positions and the positions of every cached key.
    std::vector<int32_t> pos_, kv_pos_;

    cpu::WeightView weight(const std::string& name) const;
    cpu::WeightView expert(const std::string& name, int e) const;  // one expert's (or MLA head's) matrix
    // Rows [first, first + n) of a matrix (one projection of a fused attn_qkv).
    cpu::WeightView weight_rows(const std::string& name, int64_t first, int64_t n) const;
    std::vector<float> values(const std::string& name) const;  // a whole tensor, dequantized
    bool has(const std::string& name) const;
    // y = x W^T (+ bias), x rounded as llama.cpp rounds it for W's type when round_activations.
    void matmul(const cpu::WeightView& w, const float* x, float* y, int n_tokens, const float* bias = nullptr) const;
    void matmul(const std::string& name, const float* x, float* y, int n_tokens) const;
    // y = norm(x) with the tensor `name` (and its bias for LayerNorm models) over rows of n_embd.
    void norm(const std::string& name, const float* x, float* y, int n_tokens) const;
    cpu::RopeParams rope_params(const RopeSpec& r, std::vector<float>& factors) const;

    void embeddings(const std::vector<int32_t>& tokens, std::vector<float>& x) const;
    // The attention block's output (before its post-norm) [n_tokens, n_head * head_dim_v].
    std::vector<float> attention_block(int l, const float* h, int n_tokens, int probs_layer, std::vector<float>* probs);
    std::vector<float> mla_attention(int l, const float* h, int n_tokens, std::vector<float>* pr);
    void record_probs(int l, const AttentionSpec& a, int n_tokens, int n_kv, std::vector<float>& pr, int probs_layer,
                      std::vector<float>* probs, const float* sinks);
    // What an LFM2 short-convolution layer's mixer adds to the residual stream [n_tokens, n_embd]
    // (reference_forward_shortconv.cpp); it updates the layer's conv state.
    std::vector<float> short_conv_block(int l, const float* h, int n_tokens);
    // What a Mamba-2 mixer adds to the residual stream [n_tokens, n_embd] (a Mamba-2 layer's, or
    // Falcon-H1's beside attention; reference_forward_mamba2.cpp); it updates the layer's states.
    std::vector<float> mamba2_block(int l, const float* h, int n_tokens);
    // What a Gated DeltaNet mixer adds to the residual stream [n_tokens, n_embd]
    // (reference_forward_deltanet.cpp); it updates the layer's conv and delta-rule states.
    std::vector<float> delta_net_block(int l, const float* h, int n_tokens);
    // Gated attention's block output [n_tokens, n_embd] (reference_forward_gated_attention.cpp):
    // attention_block's for a gated layer (AttentionSpec::gated), without biases or fused tensors.
    std::vector<float> gated_attention_block(int l, const float* h, int n_tokens, int probs_layer,
                                             std::vector<float>* probs);
    // What the FFN block adds to the residual stream [n_tokens, n_embd] (before its post-norm).
    std::vector<float> ffn_block(int l, const float* h, int n_tokens);
    // Biases (ffn_gate.bias, ffn_up.bias, ffn_down.bias) are added where `bias` says.
    std::vector<float> gated_ffn(const std::string& gate, const std::string& up, const std::string& down,
                                 Activation act, const float* h, int n_tokens, int n_ff, std::vector<float>* hidden,
                                 bool bias = false) const;
    // down(act(up h + b_up)) + b_down: GELU MLPs without a gate (GPT-2, Falcon).
    std::vector<float> plain_ffn(int l, const float* h, int n_tokens);
    std::vector<float> moe_ffn(int l, const float* h, int n_tokens);
    // A MoE layer's shared expert scaled by sigmoid(ffn_gate_inp_shexp . h) per token
    // (MoeSpec::n_ff_shared_gated; reference_forward_gated_shared.cpp).
    std::vector<float> gated_shared_expert(int l, const float* h, int n_tokens);
    void apply_edits(int layer, float* x, int n_tokens);
};

}  // namespace vkllm::model
