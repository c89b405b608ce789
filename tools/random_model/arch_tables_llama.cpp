// Dense transformers of the Llama layout (pre-RMSNorm, RoPE, SwiGLU) and its variants: biases,
// q/k norms, fused projections, partial RoPE, post-norms.
#include "random_model/arch_table_families.h"
#include "random_model/arch_table_parts.h"

namespace vkllm::random_model {
namespace {
using D = Dim;
}  // namespace

// Llama 1/2/3, SmolLM, TinyLlama: pre-RMSNorm, RoPE, SwiGLU; Llama 3.x rope_freqs. With
// --n-expert, Mixtral: the converter writes arch llama with expert_count/expert_used_count and
// experts of width feed_forward_length; llama.cpp routes with softmax, top-k, renormalised.
ArchTable llama_table() {
    ArchTable llama;
    llama.name = "llama";
    llama.globals = embeddings_and_head();
    llama.per_layer = concat(attention({}), dense_or_moe_ffn());
    llama.moe = MoeSupport::Optional;
    llama.default_n_expert_used = 2;
    return llama;
}

// Qwen2 / Qwen2.5: llama plus q, k, v biases; llama.cpp sizes wq as [n_embd, n_embd].
ArchTable qwen2_table() {
    ArchTable qwen2;
    qwen2.name = "qwen2";
    qwen2.globals = without(embeddings_and_head(), Presence::Llama3Rope);
    qwen2.per_layer = concat(attention({.qkv_bias = true}), gated_ffn(false));
    qwen2.norm_eps = 1e-6f;
    qwen2.rope_freq_base = 1000000.0f;
    qwen2.head_dim_free = false;
    return qwen2;
}

// Qwen3 (dense): llama plus per-head RMSNorm of q and k before RoPE.
ArchTable qwen3_table() {
    ArchTable qwen3;
    qwen3.name = "qwen3";
    qwen3.globals = without(embeddings_and_head(), Presence::Llama3Rope);
    qwen3.per_layer = concat(attention({.qk_norm = true}), gated_ffn(false));
    qwen3.norm_eps = 1e-6f;
    qwen3.rope_freq_base = 1000000.0f;
    return qwen3;
}

// OLMo 2: no norm before attention or FFN; RMSNorm of each sub-layer's output before the
// residual add (post_attention_norm, post_ffw_norm); RMSNorm over the whole q and k
// projections (weights [n_head * head_dim] and [n_head_kv * head_dim]); output.weight required.
ArchTable olmo2_table() {
    ArchTable olmo2;
    olmo2.name = "olmo2";
    olmo2.globals = without(without(embeddings_and_head(), Presence::Llama3Rope), Presence::Untied);
    olmo2.globals.push_back({"output.weight", {D::Embd, D::Vocab}, Init::Matrix});
    olmo2.per_layer = {
        {"blk.{L}.attn_q.weight", {D::Embd, D::QProj}, Init::Matrix},
        {"blk.{L}.attn_k.weight", {D::Embd, D::KvProj}, Init::Matrix},
        {"blk.{L}.attn_v.weight", {D::Embd, D::KvProj}, Init::Matrix},
        {"blk.{L}.attn_q_norm.weight", {D::QProj}, Init::Norm},
        {"blk.{L}.attn_k_norm.weight", {D::KvProj}, Init::Norm},
        {"blk.{L}.attn_output.weight", {D::QProj, D::Embd}, Init::Matrix},
        {"blk.{L}.post_attention_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.ffn_gate.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_up.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_down.weight", {D::Ff, D::Embd}, Init::Matrix},
        {"blk.{L}.post_ffw_norm.weight", {D::Embd}, Init::Norm},
    };
    olmo2.norm_eps = 1e-6f;
    olmo2.rope_freq_base = 500000.0f;
    olmo2.head_dim_free = false;
    olmo2.never_tied = true;
    return olmo2;
}

// Phi-3 / Phi-4-mini: fused q/k/v (attn_qkv rows [q; k; v]), fused gate/up (ffn_up rows
// [gate; up], 2 * n_ff), NeoX RoPE over the first rope.dimension_count dims of each head,
// optional LongRoPE factor tensors. The converter writes sliding_window (0 for Phi-4; llama.cpp
// disables Phi-3's window whatever its value).
ArchTable phi3_table() {
    ArchTable phi3;
    phi3.name = "phi3";
    phi3.globals = without(embeddings_and_head(), Presence::Llama3Rope);
    phi3.globals.push_back({"rope_factors_long.weight", {D::RopeHalf}, Init::LongRopeLong, Presence::LongRope});
    phi3.globals.push_back({"rope_factors_short.weight", {D::RopeHalf}, Init::LongRopeShort, Presence::LongRope});
    phi3.per_layer = {
        {"blk.{L}.attn_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.attn_qkv.weight", {D::Embd, D::QkvProj}, Init::Matrix},
        {"blk.{L}.attn_output.weight", {D::QProj, D::Embd}, Init::Matrix},
        {"blk.{L}.ffn_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.ffn_up.weight", {D::Embd, D::FfPair}, Init::Matrix},
        {"blk.{L}.ffn_down.weight", {D::Ff, D::Embd}, Init::Matrix},
    };
    // Not "random-phi3": llama.cpp's vocabulary loader gives the special tokens of models whose
    // general.name contains "phi3" or "phi-3" extra attributes and needs <|endoftext|> for that.
    phi3.default_model_name = "random-phi";
    phi3.partial_rope = true;
    phi3.head_dim_free = false;
    phi3.extra_metadata = {
        {"attention.sliding_window", gguf::Value::from_u32(0)},
    };
    return phi3;
}

// SmolLM3: the llama layout; llama.cpp skips RoPE in every 4th layer (il + 1) % 4 == 0, a
// constant (no metadata key).
ArchTable smollm3_table() {
    ArchTable smollm3;
    smollm3.name = "smollm3";
    smollm3.globals = without(embeddings_and_head(), Presence::Llama3Rope);
    smollm3.per_layer = concat(attention({}), gated_ffn(false));
    smollm3.norm_eps = 1e-6f;
    smollm3.rope_freq_base = 5000000.0f;
    return smollm3;
}

// EXAONE 3.0/3.5 (llama.cpp's src/models/exaone.cpp): the llama tensors (optional Llama 3
// rope_freqs, output.weight optional) and keys; llama.cpp rotates NeoX pairs for it. Same
// names as llama, so the same seed gives the same weights.
ArchTable exaone_table() {
    ArchTable exaone;
    exaone.name = "exaone";
    exaone.globals = embeddings_and_head();
    exaone.per_layer = concat(attention({}), gated_ffn(false));
    exaone.norm_eps = 1e-5f;
    exaone.rope_freq_base = 1000000.0f;
    return exaone;
}

}  // namespace vkllm::random_model
