// Mixtures of experts in every layer or interleaved: Qwen3-MoE, OLMoE, gpt-oss, Llama 4 and
// DeepSeek-V2/V3 (multi-head latent attention).
#include "random_model/arch_table_families.h"
#include "random_model/arch_table_parts.h"

namespace vkllm::random_model {
namespace {
using D = Dim;
}  // namespace

// Qwen3-MoE: Qwen3's attention (per-head q/k RMSNorm, NeoX RoPE, head_dim free) and MoE FFNs
// of width expert_feed_forward_length in every layer; llama.cpp renormalises the top-k weights
// (norm_w hard-coded true, no key read). No shared expert.
ArchTable qwen3moe_table() {
    ArchTable qwen3moe;
    qwen3moe.name = "qwen3moe";
    qwen3moe.globals = without(embeddings_and_head(), Presence::Llama3Rope);
    qwen3moe.per_layer = concat(attention({.qk_norm = true}), concat({{"blk.{L}.ffn_norm.weight", {D::Embd}, Init::Norm}},
                                                                     moe_ffn(Presence::Always)));
    qwen3moe.norm_eps = 1e-6f;
    qwen3moe.rope_freq_base = 1000000.0f;
    qwen3moe.moe = MoeSupport::Required;
    qwen3moe.default_n_expert = 16;
    qwen3moe.default_n_expert_used = 4;
    qwen3moe.writes_expert_ff_length = true;
    return qwen3moe;
}

// OLMoE: llama layout with RMSNorm over the whole q and k projections (weights [n_embd]: llama.cpp
// sizes both as n_embd, so multi-head attention only), NeoX RoPE, MoE FFNs of width
// feed_forward_length in every layer; top-k softmax weights NOT renormalised (norm_w false).
// output.weight required.
ArchTable olmoe_table() {
    ArchTable olmoe;
    olmoe.name = "olmoe";
    olmoe.globals = without(without(embeddings_and_head(), Presence::Llama3Rope), Presence::Untied);
    olmoe.globals.push_back({"output.weight", {D::Embd, D::Vocab}, Init::Matrix});
    olmoe.per_layer = {
        {"blk.{L}.attn_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.attn_q.weight", {D::Embd, D::QProj}, Init::Matrix},
        {"blk.{L}.attn_k.weight", {D::Embd, D::KvProj}, Init::Matrix},
        {"blk.{L}.attn_v.weight", {D::Embd, D::KvProj}, Init::Matrix},
        {"blk.{L}.attn_output.weight", {D::QProj, D::Embd}, Init::Matrix},
        {"blk.{L}.attn_q_norm.weight", {D::QProj}, Init::Norm},
        {"blk.{L}.attn_k_norm.weight", {D::KvProj}, Init::Norm},
        {"blk.{L}.ffn_norm.weight", {D::Embd}, Init::Norm},
    };
    olmoe.per_layer = concat(olmoe.per_layer, moe_ffn(Presence::Always));
    olmoe.norm_eps = 1e-5f;
    olmoe.head_dim_free = false;
    olmoe.mha_only = true;
    olmoe.never_tied = true;
    olmoe.moe = MoeSupport::Required;
    olmoe.default_n_expert = 16;
    olmoe.default_n_expert_used = 4;
    return olmoe;
}

// gpt-oss (llama.cpp's LLM_ARCH_OPENAI_MOE): q/k/v/o biases, a learned attention-sink logit
// per head (attn_sinks [n_head]), sliding-window attention on the even layers (llama.cpp's
// default pattern 2: layer il is windowed when il % 2 == 0) and full attention on the odd
// ones, NeoX RoPE (YaRN in the real models), post_attention_norm as the norm before the MoE.
// MoE in every layer: router with bias; experts `expert_feed_forward_length` wide with gate,
// up and down biases; clamped SwiGLU (alpha 1.702, limit 7); softmax over the k chosen
// logits. output.weight required. The expert gate/up weights are 4x the usual scale so
// that their outputs often pass the clamp limit 7 (std about 4), and the down weights 1/4.
ArchTable gpt_oss_table() {
    ArchTable gptoss;
    gptoss.name = "gpt-oss";
    gptoss.globals = without(without(embeddings_and_head(), Presence::Llama3Rope), Presence::Untied);
    gptoss.globals.push_back({"output.weight", {D::Embd, D::Vocab}, Init::Matrix});
    gptoss.per_layer = joined({
        {{"blk.{L}.attn_norm.weight", {D::Embd}, Init::Norm}},
        linear_with_bias("blk.{L}.attn_q", D::Embd, D::QProj),
        linear_with_bias("blk.{L}.attn_k", D::Embd, D::KvProj),
        linear_with_bias("blk.{L}.attn_v", D::Embd, D::KvProj),
        linear_with_bias("blk.{L}.attn_output", D::QProj, D::Embd),
        // one logit per head, normal(0, 1): of the order of the attention scores
        {{"blk.{L}.attn_sinks.weight", {D::Head}, Init::Bias, Presence::Always, 10.0f},
         {"blk.{L}.post_attention_norm.weight", {D::Embd}, Init::Norm}},
        linear_with_bias("blk.{L}.ffn_gate_inp", D::Embd, D::Expert),
        {{"blk.{L}.ffn_gate_exps.weight", {D::Embd, D::FfExp, D::Expert}, Init::Matrix, Presence::Always, 4.0f},
         {"blk.{L}.ffn_gate_exps.bias", {D::FfExp, D::Expert}, Init::Bias},
         {"blk.{L}.ffn_down_exps.weight", {D::FfExp, D::Embd, D::Expert}, Init::Matrix, Presence::Always, 0.25f},
         {"blk.{L}.ffn_down_exps.bias", {D::Embd, D::Expert}, Init::Bias},
         {"blk.{L}.ffn_up_exps.weight", {D::Embd, D::FfExp, D::Expert}, Init::Matrix, Presence::Always, 4.0f},
         {"blk.{L}.ffn_up_exps.bias", {D::FfExp, D::Expert}, Init::Bias}},
    });
    gptoss.norm_eps = 1e-5f;
    gptoss.rope_freq_base = 150000.0f;
    gptoss.always_write_head_dims = true;
    gptoss.never_tied = true;
    gptoss.default_sliding_window = 128;
    gptoss.moe = MoeSupport::Required;
    gptoss.default_n_expert = 8;
    gptoss.default_n_expert_used = 4;
    gptoss.writes_expert_ff_length = true;
    return gptoss;
}

// Llama 4 (llama.cpp's LLM_ARCH_LLAMA4, src/models/llama4.cpp): the llama layout (NORM RoPE,
// optional Llama 3 rope_freqs) with dense and MoE layers interleaved: layer il has experts when
// (il + 1) % interleave_moe_layer_step == 0 (Scout 1, Maverick 2), a dense SwiGLU FFN of width
// feed_forward_length otherwise. MoE layers: a router, experts of width
// expert_feed_forward_length and one always-on shared expert of the same width
// (ffn_*_shexp); top-k by router logit, sigmoid of the chosen logit scales the expert's
// input. Every 4th layer skips RoPE and the other layers chunk their attention (llama.cpp
// constants, no keys); the converter writes no sliding_window (0 would turn chunking off).
ArchTable llama4_table() {
    ArchTable llama4;
    llama4.name = "llama4";
    llama4.globals = embeddings_and_head();
    llama4.per_layer = concat(attention({}), dense_or_moe_ffn());
    llama4.per_layer.push_back({"blk.{L}.ffn_gate_shexp.weight", {D::Embd, D::FfExp}, Init::Matrix, Presence::Moe});
    llama4.per_layer.push_back({"blk.{L}.ffn_down_shexp.weight", {D::FfExp, D::Embd}, Init::Matrix, Presence::Moe});
    llama4.per_layer.push_back({"blk.{L}.ffn_up_shexp.weight", {D::Embd, D::FfExp}, Init::Matrix, Presence::Moe});
    llama4.norm_eps = 1e-5f;
    llama4.rope_freq_base = 500000.0f;
    llama4.optional_sliding_window = true;
    llama4.moe = MoeSupport::Required;
    llama4.default_n_expert = 8;
    llama4.default_n_expert_used = 1;
    llama4.writes_expert_ff_length = true;
    llama4.default_moe_layer_step = 1;
    return llama4;
}

// DeepSeek-V2/V3 (llama.cpp's LLM_ARCH_DEEPSEEK2, src/models/deepseek2.cpp) with multi-head
// latent attention in the layout the current converter writes (kv_b_proj split into attn_k_b,
// stored transposed per head, and attn_v_b): the query through a rank-q_lora bottleneck
// (attn_q_a, RMSNorm attn_q_a_norm, attn_q_b) or directly (attn_q, q_lora_rank 0);
// attn_kv_a_mqa gives the kv_lora latent (RMSNorm attn_kv_a_norm) and one rope key shared by
// all heads. NORM RoPE on the last rope dims of each head. Leading dense layers, then MoE layers
// with shared experts (ffn_*_shexp, width n_ff_exp * expert_shared_count) and, with sigmoid
// gating, the expert-selection bias exp_probs_b.
ArchTable deepseek2_table() {
    ArchTable deepseek2;
    deepseek2.name = "deepseek2";
    deepseek2.globals = without(embeddings_and_head(), Presence::Llama3Rope);
    deepseek2.per_layer = {
        {"blk.{L}.attn_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.attn_q_a_norm.weight", {D::QLora}, Init::Norm, Presence::QLora},
        {"blk.{L}.attn_kv_a_norm.weight", {D::KvLora}, Init::Norm},
        {"blk.{L}.attn_q_a.weight", {D::Embd, D::QLora}, Init::Matrix, Presence::QLora},
        {"blk.{L}.attn_q_b.weight", {D::QLora, D::QProj}, Init::Matrix, Presence::QLora},
        {"blk.{L}.attn_q.weight", {D::Embd, D::QProj}, Init::Matrix, Presence::NoQLora},
        {"blk.{L}.attn_kv_a_mqa.weight", {D::Embd, D::KvLoraRope}, Init::Matrix},
        // per head h: k_nope = attn_k_b[h] (as [kv_lora, qk_nope] rows of qk_nope) applied to the latent
        {"blk.{L}.attn_k_b.weight", {D::QkNope, D::KvLora, D::Head}, Init::Matrix},
        {"blk.{L}.attn_v_b.weight", {D::KvLora, D::VHead, D::Head}, Init::Matrix},
        {"blk.{L}.attn_output.weight", {D::VProj, D::Embd}, Init::Matrix},
    };
    deepseek2.per_layer = concat(deepseek2.per_layer, dense_or_moe_ffn());
    // one bias per expert, normal(0, 0.2): of the order of the gaps between sigmoid scores
    deepseek2.per_layer.push_back({"blk.{L}.exp_probs_b.bias", {D::Expert}, Init::Bias, Presence::MoeSelectionBias, 2.0f});
    deepseek2.per_layer.push_back({"blk.{L}.ffn_gate_shexp.weight", {D::Embd, D::FfShared}, Init::Matrix, Presence::Moe});
    deepseek2.per_layer.push_back({"blk.{L}.ffn_down_shexp.weight", {D::FfShared, D::Embd}, Init::Matrix, Presence::Moe});
    deepseek2.per_layer.push_back({"blk.{L}.ffn_up_shexp.weight", {D::Embd, D::FfShared}, Init::Matrix, Presence::Moe});
    deepseek2.norm_eps = 1e-6f;
    deepseek2.rope_freq_base = 10000.0f;
    deepseek2.mla = true;
    deepseek2.moe = MoeSupport::Required;
    deepseek2.default_n_expert = 8;
    deepseek2.default_n_expert_used = 2;
    deepseek2.writes_expert_ff_length = true;
    return deepseek2;
}

}  // namespace vkllm::random_model
