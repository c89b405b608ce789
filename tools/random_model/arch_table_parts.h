// Pieces the architecture tables share (arch_table_parts.cpp), composed by the per-family tables
// (arch_tables_*.cpp). Names follow llama.cpp's LLM_TENSOR_NAMES; "{L}" stands for the layer.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "random_model/arch_tables.h"

namespace vkllm::random_model {

// token_embd, Llama 3's rope_freqs (with llama3 rope scaling), output_norm, output (untied).
std::vector<TensorRule> embeddings_and_head();

struct AttentionOptions {
    bool qkv_bias = false;  // Qwen2
    bool qk_norm = false;   // Qwen3, Gemma 3: RMSNorm over each head of q and k
    bool post_norm = false; // Gemma 2/3: a norm on the attention output before the residual add
};

// attn_norm, q/k/v (with the options' biases and norms), attn_output (and its post-norm).
std::vector<TensorRule> attention(AttentionOptions o);

// act(gate(x)) * up(x) -> down, after ffn_norm (and post_ffw_norm after it with post_norm).
std::vector<TensorRule> gated_ffn(bool post_norm);

// Mixture of experts as llama.cpp reads it (build_moe_ffn): a router `ffn_gate_inp` [n_embd, n_expert]
// (ggml order: rows of n_embd, one per expert) and each expert's SwiGLU FFN stacked along the
// third dim: gate/up [n_embd, n_ff_exp, n_expert], down [n_ff_exp, n_embd, n_expert].
std::vector<TensorRule> moe_ffn(Presence presence);

// The FFN of a family whose layers are either dense or MoE (llama: Mixtral): ffn_norm, then the
// dense projections without experts or the MoE tensors with them.
std::vector<TensorRule> dense_or_moe_ffn();

// Mamba-2's mixer (llama.cpp's build_mamba2_layer) on the layers `presence` picks: ssm_in
// [n_embd -> z | x B C | dt], a causal conv1d of d_conv taps over x B C (ssm_conv1d weight and
// bias) with SiLU, the selective scan (A and D per head, dt bias, grouped B/C), y * silu(z),
// RMSNorm per group (ssm_norm), ssm_out. The conv, A, D and norm stay F32 (ggml's ssm ops read F32).
std::vector<TensorRule> mamba2_mixer(Presence presence);

// Gated DeltaNet's mixer (llama.cpp's qwen35 build_layer_attn_linear) on the 'D' layers: attn_qkv
// [n_embd -> q | k | v], attn_gate [n_embd -> z], ssm_beta and ssm_alpha [n_embd -> value heads],
// the conv1d over q | k | v (kept F32), dt bias and A per value head, the output norm over one
// value head, ssm_out.
std::vector<TensorRule> delta_net_mixer();

// Gated attention (Qwen3-Next, Qwen3.5) on the '*' layers: attn_q holds [query | gate] per head,
// per-head q/k RMSNorms.
std::vector<TensorRule> gated_attention();

// A LayerNorm: "<stem>.weight" (near 1) and "<stem>.bias" over n_embd.
std::vector<TensorRule> layer_norm(const std::string& stem, Presence presence = Presence::Always);

// A projection from `in` to `out` and its bias: "<stem>.weight" {in, out}, "<stem>.bias" {out}.
std::vector<TensorRule> linear_with_bias(const std::string& stem, Dim in, Dim out);

// The rules of `t` on the layers `presence` picks.
std::vector<TensorRule> only_on(std::vector<TensorRule> t, Presence presence);

// The rules of `a`, then those of `b`.
std::vector<TensorRule> concat(std::vector<TensorRule> a, const std::vector<TensorRule>& b);

// The rules of each part in turn.
std::vector<TensorRule> joined(std::initializer_list<std::vector<TensorRule>> parts);

// The rules of `t` but those present as `p`.
std::vector<TensorRule> without(std::vector<TensorRule> t, Presence p);

// The rules of `t` that are not norms (a hybrid writes the layer's attn_norm once, whatever its part).
std::vector<TensorRule> without_norms(std::vector<TensorRule> t);

}  // namespace vkllm::random_model
