#include "random_model/arch_tables.h"

namespace vkllm::random_model {
namespace {

using D = Dim;

// Pieces the families share, composed below. Names follow llama.cpp's LLM_TENSOR_NAMES.
std::vector<TensorRule> embeddings_and_head() {
    return {
        {"token_embd.weight", {D::Embd, D::Vocab}, Init::Embedding},
        {"rope_freqs.weight", {D::RopeHalf}, Init::RopeFreqs, Presence::Llama3Rope},
        {"output_norm.weight", {D::Embd}, Init::Norm},
        {"output.weight", {D::Embd, D::Vocab}, Init::Matrix, Presence::Untied},
    };
}

struct AttentionOptions {
    bool qkv_bias = false;  // Qwen2
    bool qk_norm = false;   // Qwen3, Gemma 3: RMSNorm over each head of q and k
    bool post_norm = false; // Gemma 2/3: a norm on the attention output before the residual add
};

std::vector<TensorRule> attention(AttentionOptions o) {
    std::vector<TensorRule> t = {
        {"blk.{L}.attn_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.attn_q.weight", {D::Embd, D::QProj}, Init::Matrix},
        {"blk.{L}.attn_k.weight", {D::Embd, D::KvProj}, Init::Matrix},
        {"blk.{L}.attn_v.weight", {D::Embd, D::KvProj}, Init::Matrix},
    };
    if (o.qkv_bias) {
        t.push_back({"blk.{L}.attn_q.bias", {D::QProj}, Init::Bias});
        t.push_back({"blk.{L}.attn_k.bias", {D::KvProj}, Init::Bias});
        t.push_back({"blk.{L}.attn_v.bias", {D::KvProj}, Init::Bias});
    }
    if (o.qk_norm) {
        t.push_back({"blk.{L}.attn_q_norm.weight", {D::HeadDim}, Init::Norm});
        t.push_back({"blk.{L}.attn_k_norm.weight", {D::HeadDim}, Init::Norm});
    }
    t.push_back({"blk.{L}.attn_output.weight", {D::QProj, D::Embd}, Init::Matrix});
    if (o.post_norm) t.push_back({"blk.{L}.post_attention_norm.weight", {D::Embd}, Init::Norm});
    return t;
}

// act(gate(x)) * up(x) -> down.
std::vector<TensorRule> gated_ffn(bool post_norm) {
    std::vector<TensorRule> t = {
        {"blk.{L}.ffn_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.ffn_gate.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_up.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_down.weight", {D::Ff, D::Embd}, Init::Matrix},
    };
    if (post_norm) t.push_back({"blk.{L}.post_ffw_norm.weight", {D::Embd}, Init::Norm});
    return t;
}

// Mixture of experts as llama.cpp reads it (build_moe_ffn): a router `ffn_gate_inp` [n_embd, n_expert]
// (ggml order: rows of n_embd, one per expert) and each expert's SwiGLU FFN stacked along the
// third dim: gate/up [n_embd, n_ff_exp, n_expert], down [n_ff_exp, n_embd, n_expert].
std::vector<TensorRule> moe_ffn(Presence presence) {
    return {
        {"blk.{L}.ffn_gate_inp.weight", {D::Embd, D::Expert}, Init::Matrix, presence},
        {"blk.{L}.ffn_gate_exps.weight", {D::Embd, D::FfExp, D::Expert}, Init::Matrix, presence},
        {"blk.{L}.ffn_down_exps.weight", {D::FfExp, D::Embd, D::Expert}, Init::Matrix, presence},
        {"blk.{L}.ffn_up_exps.weight", {D::Embd, D::FfExp, D::Expert}, Init::Matrix, presence},
    };
}

// The FFN of a family whose layers are either dense or MoE (llama: Mixtral): ffn_norm, then the
// dense projections without experts or the MoE tensors with them.
std::vector<TensorRule> dense_or_moe_ffn() {
    std::vector<TensorRule> t = gated_ffn(false);
    for (TensorRule& r : t)
        if (r.name != "blk.{L}.ffn_norm.weight") r.presence = Presence::Dense;
    for (const TensorRule& r : moe_ffn(Presence::Moe)) t.push_back(r);
    return t;
}

// Mamba-2's mixer (llama.cpp's build_mamba2_layer) on the layers `presence` picks: ssm_in
// [n_embd -> z | x B C | dt], a causal conv1d of d_conv taps over x B C (ssm_conv1d weight and
// bias) with SiLU, the selective scan (A and D per head, dt bias, grouped B/C), y * silu(z),
// RMSNorm per group (ssm_norm), ssm_out. The conv, A, D and norm stay F32 (ggml's ssm ops read F32).
std::vector<TensorRule> mamba2_mixer(Presence presence) {
    return {
        {"blk.{L}.ssm_in.weight", {D::Embd, D::SsmInProj}, Init::Matrix, presence},
        {"blk.{L}.ssm_conv1d.weight", {D::SsmConv, D::SsmConvDim}, Init::Matrix, presence, 1.0f, true},
        {"blk.{L}.ssm_conv1d.bias", {D::SsmConvDim}, Init::Bias, presence},
        {"blk.{L}.ssm_dt.bias", {D::SsmHead}, Init::SsmDtBias, presence},
        {"blk.{L}.ssm_a", {D::One, D::SsmHead}, Init::SsmA, presence, 1.0f, true},
        {"blk.{L}.ssm_d", {D::One, D::SsmHead}, Init::Norm, presence, 1.0f, true},
        {"blk.{L}.ssm_norm.weight", {D::SsmGroupWidth, D::SsmGroups}, Init::Norm, presence, 1.0f, true},
        {"blk.{L}.ssm_out.weight", {D::SsmInner, D::Embd}, Init::Matrix, presence},
    };
}

// Gated DeltaNet's mixer (llama.cpp's qwen35 build_layer_attn_linear) on the 'D' layers: attn_qkv
// [n_embd -> q | k | v], attn_gate [n_embd -> z], ssm_beta and ssm_alpha [n_embd -> value heads],
// the conv1d over q | k | v (kept F32), dt bias and A per value head, the output norm over one
// value head, ssm_out.
std::vector<TensorRule> delta_net_mixer() {
    const Presence p = Presence::DeltaNetLayer;
    return {
        {"blk.{L}.attn_qkv.weight", {D::Embd, D::SsmConvDim}, Init::Matrix, p},
        {"blk.{L}.attn_gate.weight", {D::Embd, D::SsmInner}, Init::Matrix, p},
        {"blk.{L}.ssm_beta.weight", {D::Embd, D::SsmHead}, Init::Matrix, p},
        {"blk.{L}.ssm_alpha.weight", {D::Embd, D::SsmHead}, Init::Matrix, p},
        {"blk.{L}.ssm_conv1d.weight", {D::SsmConv, D::SsmConvDim}, Init::Matrix, p, 1.0f, true},
        {"blk.{L}.ssm_dt.bias", {D::SsmHead}, Init::SsmDtBias, p},
        {"blk.{L}.ssm_a", {D::SsmHead}, Init::SsmA, p, 1.0f, true},
        {"blk.{L}.ssm_norm.weight", {D::SsmState}, Init::Norm, p, 1.0f, true},
        {"blk.{L}.ssm_out.weight", {D::SsmInner, D::Embd}, Init::Matrix, p},
    };
}

// Gated attention (Qwen3-Next, Qwen3.5) on the '*' layers: attn_q holds [query | gate] per head,
// per-head q/k RMSNorms.
std::vector<TensorRule> gated_attention() {
    const Presence p = Presence::AttentionLayer;
    return {
        {"blk.{L}.attn_q.weight", {D::Embd, D::QProjGated}, Init::Matrix, p},
        {"blk.{L}.attn_k.weight", {D::Embd, D::KvProj}, Init::Matrix, p},
        {"blk.{L}.attn_v.weight", {D::Embd, D::KvProj}, Init::Matrix, p},
        {"blk.{L}.attn_output.weight", {D::QProj, D::Embd}, Init::Matrix, p},
        {"blk.{L}.attn_q_norm.weight", {D::HeadDim}, Init::Norm, p},
        {"blk.{L}.attn_k_norm.weight", {D::HeadDim}, Init::Norm, p},
    };
}

// The rules of `t` on the layers `presence` picks.
std::vector<TensorRule> only_on(std::vector<TensorRule> t, Presence presence) {
    for (TensorRule& r : t) r.presence = presence;
    return t;
}

std::vector<TensorRule> concat(std::vector<TensorRule> a, const std::vector<TensorRule>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

std::vector<TensorRule> without(std::vector<TensorRule> t, Presence p) {
    std::erase_if(t, [p](const TensorRule& r) { return r.presence == p; });
    return t;
}

// The rules of `t` that are not norms (a hybrid writes the layer's attn_norm once, whatever its part).
std::vector<TensorRule> without_norms(std::vector<TensorRule> t) {
    std::erase_if(t, [](const TensorRule& r) { return r.init == Init::Norm; });
    return t;
}

std::vector<ArchTable> make_tables() {
    std::vector<ArchTable> tables;

    // Llama 1/2/3, SmolLM, TinyLlama: pre-RMSNorm, RoPE, SwiGLU; Llama 3.x rope_freqs. With
    // --n-expert, Mixtral: the converter writes arch llama with expert_count/expert_used_count and
    // experts of width feed_forward_length; llama.cpp routes with softmax, top-k, renormalised.
    ArchTable llama;
    llama.name = "llama";
    llama.globals = embeddings_and_head();
    llama.per_layer = concat(attention({}), dense_or_moe_ffn());
    llama.moe = MoeSupport::Optional;
    llama.default_n_expert_used = 2;
    tables.push_back(llama);

    // Qwen2 / Qwen2.5: llama plus q, k, v biases; llama.cpp sizes wq as [n_embd, n_embd].
    ArchTable qwen2;
    qwen2.name = "qwen2";
    qwen2.globals = without(embeddings_and_head(), Presence::Llama3Rope);
    qwen2.per_layer = concat(attention({.qkv_bias = true}), gated_ffn(false));
    qwen2.norm_eps = 1e-6f;
    qwen2.rope_freq_base = 1000000.0f;
    qwen2.head_dim_free = false;
    tables.push_back(qwen2);

    // Qwen3 (dense): llama plus per-head RMSNorm of q and k before RoPE.
    ArchTable qwen3;
    qwen3.name = "qwen3";
    qwen3.globals = without(embeddings_and_head(), Presence::Llama3Rope);
    qwen3.per_layer = concat(attention({.qk_norm = true}), gated_ffn(false));
    qwen3.norm_eps = 1e-6f;
    qwen3.rope_freq_base = 1000000.0f;
    tables.push_back(qwen3);

    // Gemma 2: sandwich norms, logit soft-capping, sliding window on every other layer, output
    // always tied to token_embd.
    ArchTable gemma2;
    gemma2.name = "gemma2";
    gemma2.globals = without(without(embeddings_and_head(), Presence::Llama3Rope), Presence::Untied);
    gemma2.per_layer = concat(attention({.post_norm = true}), gated_ffn(true));
    gemma2.norm_eps = 1e-6f;
    gemma2.always_write_head_dims = true;
    gemma2.always_tied = true;
    gemma2.default_sliding_window = 4096;
    gemma2.default_attn_softcap = 50.0f;  // the converter always writes both (Gemma 2's values)
    gemma2.default_final_softcap = 30.0f;
    tables.push_back(gemma2);

    // Gemma 3 (text): Gemma 2's sandwich norms plus q/k norms, no soft-capping; five local layers
    // (RoPE base 10000) to one global (base 1e6).
    ArchTable gemma3;
    gemma3.name = "gemma3";
    gemma3.globals = without(embeddings_and_head(), Presence::Llama3Rope);
    gemma3.per_layer = concat(attention({.qk_norm = true, .post_norm = true}), gated_ffn(true));
    gemma3.norm_eps = 1e-6f;
    gemma3.rope_freq_base = 1000000.0f;
    gemma3.always_write_head_dims = true;
    gemma3.default_sliding_window = 512;
    gemma3.default_final_softcap = -1.0f;  // read by llama.cpp when present; Gemma 3 has none
    gemma3.extra_metadata = {
        {"rope.freq_base_swa", gguf::Value::from_f32(10000.0f)},
    };
    tables.push_back(gemma3);

    // GPT-2: LayerNorm (weight and bias), learned position embeddings, fused q/k/v with bias,
    // biased output and MLP projections, GELU MLP, no RoPE. The converter writes no
    // head_count_kv (MHA) and no rope keys.
    ArchTable gpt2;
    gpt2.name = "gpt2";
    gpt2.globals = {
        {"token_embd.weight", {D::Embd, D::Vocab}, Init::Embedding},
        {"position_embd.weight", {D::Embd, D::Ctx}, Init::Embedding},
        {"output_norm.weight", {D::Embd}, Init::Norm},
        {"output_norm.bias", {D::Embd}, Init::Bias},
        {"output.weight", {D::Embd, D::Vocab}, Init::Matrix, Presence::Untied},
    };
    gpt2.per_layer = {
        {"blk.{L}.attn_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.attn_norm.bias", {D::Embd}, Init::Bias},
        {"blk.{L}.attn_qkv.weight", {D::Embd, D::QkvProj}, Init::Matrix},
        {"blk.{L}.attn_qkv.bias", {D::QkvProj}, Init::Bias},
        {"blk.{L}.attn_output.weight", {D::QProj, D::Embd}, Init::Matrix},
        {"blk.{L}.attn_output.bias", {D::Embd}, Init::Bias},
        {"blk.{L}.ffn_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.ffn_norm.bias", {D::Embd}, Init::Bias},
        {"blk.{L}.ffn_up.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_up.bias", {D::Ff}, Init::Bias},
        {"blk.{L}.ffn_down.weight", {D::Ff, D::Embd}, Init::Matrix},
        {"blk.{L}.ffn_down.bias", {D::Embd}, Init::Bias},
    };
    gpt2.norm = NormKind::LayerNorm;
    gpt2.uses_rope = false;
    gpt2.head_dim_free = false;
    gpt2.writes_head_count_kv = false;
    tables.push_back(gpt2);

    // BERT (encoder): token + token type + learned position embeddings, LayerNorm of their sum,
    // bidirectional attention with biases, post-norm of each residual sum, GELU MLP with
    // biases; no output norm, no output.weight (llama.cpp reads none). CLS pooling.
    ArchTable bert;
    bert.name = "bert";
    bert.globals = {
        {"token_embd.weight", {D::Embd, D::Vocab}, Init::Embedding},
        {"token_types.weight", {D::Embd, D::TokenTypes}, Init::Embedding},
        {"position_embd.weight", {D::Embd, D::Ctx}, Init::Embedding},
        {"token_embd_norm.weight", {D::Embd}, Init::Norm},
        {"token_embd_norm.bias", {D::Embd}, Init::Bias},
    };
    bert.per_layer = {
        {"blk.{L}.attn_q.weight", {D::Embd, D::QProj}, Init::Matrix},
        {"blk.{L}.attn_q.bias", {D::QProj}, Init::Bias},
        {"blk.{L}.attn_k.weight", {D::Embd, D::KvProj}, Init::Matrix},
        {"blk.{L}.attn_k.bias", {D::KvProj}, Init::Bias},
        {"blk.{L}.attn_v.weight", {D::Embd, D::KvProj}, Init::Matrix},
        {"blk.{L}.attn_v.bias", {D::KvProj}, Init::Bias},
        {"blk.{L}.attn_output.weight", {D::QProj, D::Embd}, Init::Matrix},
        {"blk.{L}.attn_output.bias", {D::Embd}, Init::Bias},
        {"blk.{L}.attn_output_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.attn_output_norm.bias", {D::Embd}, Init::Bias},
        {"blk.{L}.ffn_up.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_up.bias", {D::Ff}, Init::Bias},
        {"blk.{L}.ffn_down.weight", {D::Ff, D::Embd}, Init::Matrix},
        {"blk.{L}.ffn_down.bias", {D::Embd}, Init::Bias},
        {"blk.{L}.layer_output_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.layer_output_norm.bias", {D::Embd}, Init::Bias},
    };
    bert.norm = NormKind::LayerNorm;
    bert.norm_eps = 1e-12f;
    bert.uses_rope = false;
    bert.head_dim_free = false;
    bert.mha_only = true;
    bert.always_tied = true;
    bert.extra_metadata = {
        {"attention.causal", gguf::Value::from_bool(false)},
        {"pooling_type", gguf::Value::from_u32(2)},  // LLAMA_POOLING_TYPE_CLS
    };
    tables.push_back(bert);

    // OLMo 2: no norm before attention or FFN; RMSNorm of each sub-layer's output before the
    // residual add (post_attention_norm, post_ffw_norm); RMSNorm over the whole q and k
    // projections (weights [n_head * head_dim] and [n_head_kv * head_dim]); output.weight required.
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
    tables.push_back(olmo2);

    // Phi-3 / Phi-4-mini: fused q/k/v (attn_qkv rows [q; k; v]), fused gate/up (ffn_up rows
    // [gate; up], 2 * n_ff), NeoX RoPE over the first rope.dimension_count dims of each head,
    // optional LongRoPE factor tensors. The converter writes sliding_window (0 for Phi-4; llama.cpp
    // disables Phi-3's window whatever its value).
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
    tables.push_back(phi3);

    // SmolLM3: the llama layout; llama.cpp skips RoPE in every 4th layer (il + 1) % 4 == 0, a
    // constant (no metadata key).
    ArchTable smollm3;
    smollm3.name = "smollm3";
    smollm3.globals = without(embeddings_and_head(), Presence::Llama3Rope);
    smollm3.per_layer = concat(attention({}), gated_ffn(false));
    smollm3.norm_eps = 1e-6f;
    smollm3.rope_freq_base = 5000000.0f;
    tables.push_back(smollm3);

    // EXAONE 3.0/3.5 (llama.cpp's src/models/exaone.cpp): the llama tensors (optional Llama 3
    // rope_freqs, output.weight optional) and keys; llama.cpp rotates NeoX pairs for it. Same
    // names as llama, so the same seed gives the same weights.
    ArchTable exaone;
    exaone.name = "exaone";
    exaone.globals = embeddings_and_head();
    exaone.per_layer = concat(attention({}), gated_ffn(false));
    exaone.norm_eps = 1e-5f;
    exaone.rope_freq_base = 1000000.0f;
    tables.push_back(exaone);

    // Mamba-2 (llama.cpp's src/models/mamba2.cpp): no attention, no FFN; each layer is RMSNorm
    // (attn_norm), then the SSM mixer.
    ArchTable mamba2;
    mamba2.name = "mamba2";
    mamba2.globals = without(embeddings_and_head(), Presence::Llama3Rope);
    mamba2.per_layer = concat({{"blk.{L}.attn_norm.weight", {D::Embd}, Init::Norm}}, mamba2_mixer(Presence::Always));
    mamba2.uses_rope = false;
    mamba2.writes_head_count_kv = false;
    mamba2.ssm = true;
    tables.push_back(mamba2);

    // Mamba (Mamba-1, llama.cpp's src/models/mamba.cpp, build_mamba_layer): each layer RMSNorm
    // (attn_norm), then ssm_in [n_embd -> x | z], the causal conv1d over x (weight and bias), x_proj
    // (ssm_x [d_inner -> dt_rank | B | C]), dt_proj (ssm_dt weight [dt_rank -> d_inner] and bias),
    // the scan with A [d_state, d_inner] (-exp(A_log)) and D [d_inner], the gate, ssm_out.
    ArchTable mamba;
    mamba.name = "mamba";
    mamba.globals = without(embeddings_and_head(), Presence::Llama3Rope);
    mamba.per_layer = {
        {"blk.{L}.attn_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.ssm_in.weight", {D::Embd, D::SsmInnerPair}, Init::Matrix},
        {"blk.{L}.ssm_conv1d.weight", {D::SsmConv, D::SsmInner}, Init::Matrix, Presence::Always, 1.0f, true},
        {"blk.{L}.ssm_conv1d.bias", {D::SsmInner}, Init::Bias},
        {"blk.{L}.ssm_x.weight", {D::SsmInner, D::SsmXProj}, Init::Matrix},
        {"blk.{L}.ssm_dt.weight", {D::SsmDtRank, D::SsmInner}, Init::Matrix},
        {"blk.{L}.ssm_dt.bias", {D::SsmInner}, Init::SsmDtBias},
        {"blk.{L}.ssm_a", {D::SsmState, D::SsmInner}, Init::SsmA, Presence::Always, 1.0f, true},
        {"blk.{L}.ssm_d", {D::SsmInner}, Init::Norm, Presence::Always, 1.0f, true},
        {"blk.{L}.ssm_out.weight", {D::SsmInner, D::Embd}, Init::Matrix},
    };
    mamba.uses_rope = false;
    mamba.writes_head_count_kv = false;
    mamba.ssm = true;
    mamba.mamba1 = true;
    tables.push_back(mamba);

    // Jamba (llama.cpp's src/models/jamba.cpp): attn_norm, then Mamba-1 ('M', with ssm_dt_norm,
    // ssm_b_norm and ssm_c_norm: RMS norms of dt, B and C) or attention without RoPE ('*', q of
    // n_embd), then ffn_norm and a SwiGLU FFN, or with --n-expert experts on every
    // --moe-layer-step-th layer (default 2: layers 1, 3, ..., as Jamba's expert period 2, offset
    // 1); llama.cpp finds those layers by their ffn_gate_inp, so no step key is written.
    ArchTable jamba;
    jamba.name = "jamba";
    jamba.globals = without(embeddings_and_head(), Presence::Llama3Rope);
    jamba.per_layer = {
        {"blk.{L}.attn_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.ssm_in.weight", {D::Embd, D::SsmInnerPair}, Init::Matrix, Presence::SsmLayer},
        {"blk.{L}.ssm_conv1d.weight", {D::SsmConv, D::SsmInner}, Init::Matrix, Presence::SsmLayer, 1.0f, true},
        {"blk.{L}.ssm_conv1d.bias", {D::SsmInner}, Init::Bias, Presence::SsmLayer},
        {"blk.{L}.ssm_x.weight", {D::SsmInner, D::SsmXProj}, Init::Matrix, Presence::SsmLayer},
        {"blk.{L}.ssm_dt_norm.weight", {D::SsmDtRank}, Init::Norm, Presence::SsmLayer},
        {"blk.{L}.ssm_dt.weight", {D::SsmDtRank, D::SsmInner}, Init::Matrix, Presence::SsmLayer},
        {"blk.{L}.ssm_dt.bias", {D::SsmInner}, Init::SsmDtBias, Presence::SsmLayer},
        {"blk.{L}.ssm_b_norm.weight", {D::SsmState}, Init::Norm, Presence::SsmLayer},
        {"blk.{L}.ssm_c_norm.weight", {D::SsmState}, Init::Norm, Presence::SsmLayer},
        {"blk.{L}.ssm_a", {D::SsmState, D::SsmInner}, Init::SsmA, Presence::SsmLayer, 1.0f, true},
        {"blk.{L}.ssm_d", {D::SsmInner}, Init::Norm, Presence::SsmLayer, 1.0f, true},
        {"blk.{L}.ssm_out.weight", {D::SsmInner, D::Embd}, Init::Matrix, Presence::SsmLayer},
    };
    jamba.per_layer = concat(jamba.per_layer, only_on(without_norms(attention({})), Presence::AttentionLayer));
    jamba.per_layer = concat(jamba.per_layer, dense_or_moe_ffn());
    jamba.uses_rope = false;
    jamba.head_dim_free = false;
    jamba.ssm = true;
    jamba.mamba1 = true;
    jamba.hybrid = Hybrid::MixerOrAttention;
    jamba.default_layers = "M*";
    jamba.moe = MoeSupport::Optional;
    jamba.default_n_expert_used = 2;
    jamba.default_moe_layer_step = 2;
    jamba.writes_moe_layer_step = false;
    tables.push_back(jamba);

    // Nemotron-H (llama.cpp's src/models/nemotron-h.cpp): one part per layer after its RMSNorm
    // (attn_norm): a Mamba-2 mixer ('M'), attention without RoPE ('*', attn_q/k/v/output), or an
    // MLP alone ('-', ffn_up and ffn_down: relu(up x)^2, no gate). The converter writes
    // head_count_kv and feed_forward_length per layer (0 where the layer has no attention / no
    // MLP), key_length and value_length, and llama.cpp requires attention.layer_norm_epsilon.
    ArchTable nemotron_h;
    nemotron_h.name = "nemotron_h";
    nemotron_h.globals = without(embeddings_and_head(), Presence::Llama3Rope);
    nemotron_h.per_layer = concat(concat({{"blk.{L}.attn_norm.weight", {D::Embd}, Init::Norm}},
                                         mamba2_mixer(Presence::SsmLayer)),
                                  only_on(without_norms(attention({})), Presence::AttentionLayer));
    nemotron_h.per_layer = concat(nemotron_h.per_layer, {
        {"blk.{L}.ffn_down.weight", {D::Ff, D::Embd}, Init::Matrix, Presence::FfnAloneLayer},
        {"blk.{L}.ffn_up.weight", {D::Embd, D::Ff}, Init::Matrix, Presence::FfnAloneLayer},
    });
    nemotron_h.uses_rope = false;
    nemotron_h.always_write_head_dims = true;
    nemotron_h.ssm = true;
    nemotron_h.hybrid = Hybrid::OnePartPerLayer;
    nemotron_h.default_layers = "M-M*-";
    nemotron_h.extra_metadata = {{"attention.layer_norm_epsilon", gguf::Value::from_f32(1e-5f)}};
    tables.push_back(nemotron_h);

    // Granite 4.0-H (llama.cpp's src/models/granite-hybrid.cpp): RMSNorm (attn_norm), then a
    // Mamba-2 mixer ('M') or attention with RoPE on adjacent pairs ('*'), then ffn_norm and a
    // SwiGLU FFN, or with --n-expert softmax-routed experts plus a shared expert
    // (`expert_shared_feed_forward_length`, here n_ff). Granite's embedding multiplier and
    // attention scale are written (Granite 4.0's 12 and 1/head_dim-like 0.0625).
    // Falcon-H1 (llama.cpp's src/models/falcon-h1.cpp): every layer has attention (NeoX RoPE) and
    // the Mamba-2 mixer side by side, both after attn_norm, then a SwiGLU FFN after ffn_norm,
    // which llama.cpp (and the converter) names `blk.N.ffn_norm` without `.weight`. The muP
    // multipliers are folded into the weights by the converter, so none is written.
    ArchTable falcon_h1;
    falcon_h1.name = "falcon-h1";
    falcon_h1.globals = without(embeddings_and_head(), Presence::Llama3Rope);
    falcon_h1.per_layer = concat(attention({}), mamba2_mixer(Presence::Always));
    falcon_h1.per_layer = concat(falcon_h1.per_layer, {
        {"blk.{L}.ffn_norm", {D::Embd}, Init::Norm},
        {"blk.{L}.ffn_gate.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_up.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_down.weight", {D::Ff, D::Embd}, Init::Matrix},
    });
    falcon_h1.always_write_head_dims = true;  // the converter writes key_length and value_length
    falcon_h1.ssm = true;
    falcon_h1.ssm_beside_attention = true;
    tables.push_back(falcon_h1);

    // LFM2 (llama.cpp's src/models/lfm2.cpp): layers 'C' (a gated short convolution:
    // shortconv.in_proj to B | C | u, the depthwise conv of l_cache taps, kept F32, out_proj) or
    // '*' (attention with per-head q/k RMSNorms, NeoX RoPE), both after attn_norm, then a SwiGLU
    // FFN after ffn_norm on every layer. head_count_kv per layer marks the attention layers (0
    // elsewhere); the final norm is written as token_embd_norm (llama.cpp's name for it).
    ArchTable lfm2;
    lfm2.name = "lfm2";
    lfm2.globals = {
        {"token_embd.weight", {D::Embd, D::Vocab}, Init::Embedding},
        {"token_embd_norm.weight", {D::Embd}, Init::Norm},
        {"output.weight", {D::Embd, D::Vocab}, Init::Matrix, Presence::Untied},
    };
    lfm2.per_layer = concat({{"blk.{L}.attn_norm.weight", {D::Embd}, Init::Norm}},
                            only_on(without_norms(attention({})), Presence::AttentionLayer));
    lfm2.per_layer = concat(lfm2.per_layer, {
        {"blk.{L}.attn_q_norm.weight", {D::HeadDim}, Init::Norm, Presence::AttentionLayer},
        {"blk.{L}.attn_k_norm.weight", {D::HeadDim}, Init::Norm, Presence::AttentionLayer},
        {"blk.{L}.shortconv.conv.weight", {D::ConvLCache, D::Embd}, Init::Matrix, Presence::ConvLayer, 1.0f, true},
        {"blk.{L}.shortconv.in_proj.weight", {D::Embd, D::EmbdTriple}, Init::Matrix, Presence::ConvLayer},
        {"blk.{L}.shortconv.out_proj.weight", {D::Embd, D::Embd}, Init::Matrix, Presence::ConvLayer},
    });
    lfm2.per_layer = concat(lfm2.per_layer, gated_ffn(false));
    lfm2.rope_freq_base = 1000000.0f;
    lfm2.hybrid = Hybrid::ConvOrAttention;
    // An attention layer within the first two: llama.cpp cannot run an LFM2 file without one (its
    // KV cache would have no layers), and the default --n-layer is 2.
    lfm2.default_layers = "C*";
    lfm2.shortconv = true;
    lfm2.optional_sliding_window = true;  // attention.sliding_window only when given: a window on the attention layers
    tables.push_back(lfm2);

    // Qwen3.5 (llama.cpp's src/models/qwen35.cpp): 'D' layers Gated DeltaNet, '*' layers gated
    // attention (NeoX RoPE over rope.dimension_count dims, llama.cpp's IMRoPE sections written as
    // the converter does), every layer attn_norm before its mixer and post_attention_norm before a
    // SwiGLU FFN. llama.cpp finds the attention layers by full_attention_interval.
    ArchTable qwen35;
    qwen35.name = "qwen35";
    qwen35.globals = without(embeddings_and_head(), Presence::Llama3Rope);
    qwen35.per_layer = concat(concat({{"blk.{L}.attn_norm.weight", {D::Embd}, Init::Norm}}, delta_net_mixer()),
                              gated_attention());
    qwen35.per_layer = concat(qwen35.per_layer, {
        {"blk.{L}.post_attention_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.ffn_gate.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_up.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_down.weight", {D::Ff, D::Embd}, Init::Matrix},
    });
    qwen35.norm_eps = 1e-6f;
    qwen35.rope_freq_base = 10000000.0f;
    qwen35.partial_rope = true;
    qwen35.ssm = true;
    qwen35.delta_net = true;
    qwen35.hybrid = Hybrid::DeltaNetOrAttention;
    qwen35.default_layers = "D*";  // an attention layer within the default two (interval 2)
    tables.push_back(qwen35);

    // Qwen3.5-MoE (src/models/qwen35moe.cpp): Qwen3.5's layers with experts after every layer
    // (softmax routing, renormalised, expert_feed_forward_length wide) and a shared expert of
    // expert_shared_feed_forward_length (n_ff) scaled by sigmoid(ffn_gate_inp_shexp x).
    // Qwen3-Next (src/models/qwen3next.cpp): the same, but b and alpha from one ssm_ba per key
    // head, each key head repeated for its value heads, no IMRoPE sections.
    const std::vector<TensorRule> gated_shared_expert = {
        {"blk.{L}.ffn_gate_inp_shexp.weight", {D::Embd}, Init::Matrix, Presence::Always, 1.0f, true},
        {"blk.{L}.ffn_gate_shexp.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_up_shexp.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_down_shexp.weight", {D::Ff, D::Embd}, Init::Matrix},
    };
    for (const char* name : {"qwen35moe", "qwen3next"}) {
        ArchTable t = qwen35;
        t.name = name;
        t.per_layer = {};
        for (const TensorRule& r : qwen35.per_layer)
            if (r.name.rfind("blk.{L}.ffn_", 0) != 0) t.per_layer.push_back(r);
        t.per_layer = concat(concat(t.per_layer, moe_ffn(Presence::Always)), gated_shared_expert);
        if (t.name == "qwen3next") {
            std::vector<TensorRule> rules;
            for (const TensorRule& r : t.per_layer)
                if (r.name != "blk.{L}.ssm_beta.weight" && r.name != "blk.{L}.ssm_alpha.weight") rules.push_back(r);
            rules.push_back({"blk.{L}.ssm_ba.weight", {D::Embd, D::SsmHeadPair}, Init::Matrix, Presence::DeltaNetLayer});
            t.per_layer = rules;
            t.delta_ba_grouped = true;
        }
        t.moe = MoeSupport::Required;
        t.default_n_expert = 4;
        t.default_n_expert_used = 2;
        t.writes_expert_ff_length = true;
        t.shared_expert_ff_key = true;
        tables.push_back(t);
    }

    ArchTable granitehybrid;
    granitehybrid.name = "granitehybrid";
    granitehybrid.globals = without(embeddings_and_head(), Presence::Llama3Rope);
    granitehybrid.per_layer = concat(concat({{"blk.{L}.attn_norm.weight", {D::Embd}, Init::Norm}},
                                            mamba2_mixer(Presence::SsmLayer)),
                                     only_on(without_norms(attention({})), Presence::AttentionLayer));
    granitehybrid.per_layer = concat(granitehybrid.per_layer, dense_or_moe_ffn());
    granitehybrid.per_layer = concat(granitehybrid.per_layer, {
        {"blk.{L}.ffn_gate_shexp.weight", {D::Embd, D::Ff}, Init::Matrix, Presence::Moe},
        {"blk.{L}.ffn_up_shexp.weight", {D::Embd, D::Ff}, Init::Matrix, Presence::Moe},
        {"blk.{L}.ffn_down_shexp.weight", {D::Ff, D::Embd}, Init::Matrix, Presence::Moe},
    });
    granitehybrid.moe = MoeSupport::Optional;
    granitehybrid.default_n_expert_used = 2;
    granitehybrid.shared_expert_ff_key = true;
    granitehybrid.ssm = true;
    granitehybrid.hybrid = Hybrid::MixerOrAttention;
    granitehybrid.default_layers = "M*";
    granitehybrid.granite_multipliers = true;
    granitehybrid.extra_metadata = {{"embedding_scale", gguf::Value::from_f32(12.0f)},
                                    {"attention.scale", gguf::Value::from_f32(0.0625f)}};
    tables.push_back(granitehybrid);

    // Qwen3-MoE: Qwen3's attention (per-head q/k RMSNorm, NeoX RoPE, head_dim free) and MoE FFNs
    // of width expert_feed_forward_length in every layer; llama.cpp renormalises the top-k weights
    // (norm_w hard-coded true, no key read). No shared expert.
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
    tables.push_back(qwen3moe);

    // OLMoE: llama layout with RMSNorm over the whole q and k projections (weights [n_embd]: llama.cpp
    // sizes both as n_embd, so multi-head attention only), NeoX RoPE, MoE FFNs of width
    // feed_forward_length in every layer; top-k softmax weights NOT renormalised (norm_w false).
    // output.weight required.
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
    tables.push_back(olmoe);

    // gpt-oss (llama.cpp's LLM_ARCH_OPENAI_MOE): q/k/v/o biases, a learned attention-sink logit
    // per head (attn_sinks [n_head]), sliding-window attention on the even layers (llama.cpp's
    // default pattern 2: layer il is windowed when il % 2 == 0) and full attention on the odd
    // ones, NeoX RoPE (YaRN in the real models), post_attention_norm as the norm before the MoE.
    // MoE in every layer: router with bias; experts `expert_feed_forward_length` wide with gate,
    // up and down biases; clamped SwiGLU (alpha 1.702, limit 7); softmax over the k chosen
    // logits. output.weight required. The expert gate/up weights are 4x the usual scale so
    // that their outputs often pass the clamp limit 7 (std about 4), and the down weights 1/4.
    ArchTable gptoss;
    gptoss.name = "gpt-oss";
    gptoss.globals = without(without(embeddings_and_head(), Presence::Llama3Rope), Presence::Untied);
    gptoss.globals.push_back({"output.weight", {D::Embd, D::Vocab}, Init::Matrix});
    gptoss.per_layer = {
        {"blk.{L}.attn_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.attn_q.weight", {D::Embd, D::QProj}, Init::Matrix},
        {"blk.{L}.attn_q.bias", {D::QProj}, Init::Bias},
        {"blk.{L}.attn_k.weight", {D::Embd, D::KvProj}, Init::Matrix},
        {"blk.{L}.attn_k.bias", {D::KvProj}, Init::Bias},
        {"blk.{L}.attn_v.weight", {D::Embd, D::KvProj}, Init::Matrix},
        {"blk.{L}.attn_v.bias", {D::KvProj}, Init::Bias},
        {"blk.{L}.attn_output.weight", {D::QProj, D::Embd}, Init::Matrix},
        {"blk.{L}.attn_output.bias", {D::Embd}, Init::Bias},
        // one logit per head, normal(0, 1): of the order of the attention scores
        {"blk.{L}.attn_sinks.weight", {D::Head}, Init::Bias, Presence::Always, 10.0f},
        {"blk.{L}.post_attention_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.ffn_gate_inp.weight", {D::Embd, D::Expert}, Init::Matrix},
        {"blk.{L}.ffn_gate_inp.bias", {D::Expert}, Init::Bias},
        {"blk.{L}.ffn_gate_exps.weight", {D::Embd, D::FfExp, D::Expert}, Init::Matrix, Presence::Always, 4.0f},
        {"blk.{L}.ffn_gate_exps.bias", {D::FfExp, D::Expert}, Init::Bias},
        {"blk.{L}.ffn_down_exps.weight", {D::FfExp, D::Embd, D::Expert}, Init::Matrix, Presence::Always, 0.25f},
        {"blk.{L}.ffn_down_exps.bias", {D::Embd, D::Expert}, Init::Bias},
        {"blk.{L}.ffn_up_exps.weight", {D::Embd, D::FfExp, D::Expert}, Init::Matrix, Presence::Always, 4.0f},
        {"blk.{L}.ffn_up_exps.bias", {D::FfExp, D::Expert}, Init::Bias},
    };
    gptoss.norm_eps = 1e-5f;
    gptoss.rope_freq_base = 150000.0f;
    gptoss.always_write_head_dims = true;
    gptoss.never_tied = true;
    gptoss.default_sliding_window = 128;
    gptoss.moe = MoeSupport::Required;
    gptoss.default_n_expert = 8;
    gptoss.default_n_expert_used = 4;
    gptoss.writes_expert_ff_length = true;
    tables.push_back(gptoss);

    // Llama 4 (llama.cpp's LLM_ARCH_LLAMA4, src/models/llama4.cpp): the llama layout (NORM RoPE,
    // optional Llama 3 rope_freqs) with dense and MoE layers interleaved: layer il has experts when
    // (il + 1) % interleave_moe_layer_step == 0 (Scout 1, Maverick 2), a dense SwiGLU FFN of width
    // feed_forward_length otherwise. MoE layers: a router, experts of width
    // expert_feed_forward_length and one always-on shared expert of the same width
    // (ffn_*_shexp); top-k by router logit, sigmoid of the chosen logit scales the expert's
    // input. Every 4th layer skips RoPE and the other layers chunk their attention (llama.cpp
    // constants, no keys); the converter writes no sliding_window (0 would turn chunking off).
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
    tables.push_back(llama4);

    // DeepSeek-V2/V3 (llama.cpp's LLM_ARCH_DEEPSEEK2, src/models/deepseek2.cpp) with multi-head
    // latent attention in the layout the current converter writes (kv_b_proj split into attn_k_b,
    // stored transposed per head, and attn_v_b): the query through a rank-q_lora bottleneck
    // (attn_q_a, RMSNorm attn_q_a_norm, attn_q_b) or directly (attn_q, q_lora_rank 0);
    // attn_kv_a_mqa gives the kv_lora latent (RMSNorm attn_kv_a_norm) and one rope key shared by
    // all heads. NORM RoPE on the last rope dims of each head. Leading dense layers, then MoE layers
    // with shared experts (ffn_*_shexp, width n_ff_exp * expert_shared_count) and, with sigmoid
    // gating, the expert-selection bias exp_probs_b.
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
    tables.push_back(deepseek2);

    // Falcon: LayerNorm, the parallel block (attention and MLP read the same normed input; with
    // --two-norms attention reads its own attn_norm_2, Falcon-40B), fused QKV and output without
    // biases, NeoX RoPE, a plain GELU MLP without biases, output tied unless output.weight.
    ArchTable falcon;
    falcon.name = "falcon";
    falcon.globals = {
        {"token_embd.weight", {D::Embd, D::Vocab}, Init::Embedding},
        {"output_norm.weight", {D::Embd}, Init::Norm},
        {"output_norm.bias", {D::Embd}, Init::Bias},
        {"output.weight", {D::Embd, D::Vocab}, Init::Matrix, Presence::Untied},
    };
    falcon.per_layer = {
        {"blk.{L}.attn_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.attn_norm.bias", {D::Embd}, Init::Bias},
        {"blk.{L}.attn_norm_2.weight", {D::Embd}, Init::Norm, Presence::TwoNorms},
        {"blk.{L}.attn_norm_2.bias", {D::Embd}, Init::Bias, Presence::TwoNorms},
        {"blk.{L}.attn_qkv.weight", {D::Embd, D::QkvProj}, Init::Matrix},
        {"blk.{L}.attn_output.weight", {D::QProj, D::Embd}, Init::Matrix},
        {"blk.{L}.ffn_up.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_down.weight", {D::Ff, D::Embd}, Init::Matrix},
    };
    falcon.norm = NormKind::LayerNorm;
    falcon.head_dim_free = false;  // llama.cpp: wo is {n_embd, n_embd}
    tables.push_back(falcon);

    // Jais: LayerNorm, fused QKV with biases, ALiBi (attention.max_alibi_bias 8) and no position
    // encoding, SwiGLU with biases, an output.weight always.
    ArchTable jais;
    jais.name = "jais";
    jais.globals = {
        {"token_embd.weight", {D::Embd, D::Vocab}, Init::Embedding},
        {"output_norm.weight", {D::Embd}, Init::Norm},
        {"output_norm.bias", {D::Embd}, Init::Bias},
        {"output.weight", {D::Embd, D::Vocab}, Init::Matrix},
    };
    jais.per_layer = {
        {"blk.{L}.attn_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.attn_norm.bias", {D::Embd}, Init::Bias},
        {"blk.{L}.attn_qkv.weight", {D::Embd, D::QkvProj}, Init::Matrix},
        {"blk.{L}.attn_qkv.bias", {D::QkvProj}, Init::Bias},
        {"blk.{L}.attn_output.weight", {D::QProj, D::Embd}, Init::Matrix},
        {"blk.{L}.attn_output.bias", {D::Embd}, Init::Bias},
        {"blk.{L}.ffn_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.ffn_norm.bias", {D::Embd}, Init::Bias},
        {"blk.{L}.ffn_gate.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_gate.bias", {D::Ff}, Init::Bias},
        {"blk.{L}.ffn_up.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_up.bias", {D::Ff}, Init::Bias},
        {"blk.{L}.ffn_down.weight", {D::Ff, D::Embd}, Init::Matrix},
        {"blk.{L}.ffn_down.bias", {D::Embd}, Init::Bias},
    };
    jais.norm = NormKind::LayerNorm;
    jais.uses_rope = false;
    jais.head_dim_free = false;  // llama.cpp: wo is {n_embd, n_embd}
    jais.never_tied = true;
    jais.extra_metadata = {{"attention.max_alibi_bias", gguf::Value::from_f32(8.0f)}};
    tables.push_back(jais);

    return tables;
}

}  // namespace

bool ArchTable::has_presence(Presence p) const {
    for (const auto* list : {&globals, &per_layer})
        for (const TensorRule& r : *list)
            if (r.presence == p) return true;
    return false;
}

bool ArchTable::has_dim(Dim d) const {
    for (const auto* list : {&globals, &per_layer})
        for (const TensorRule& r : *list)
            for (Dim x : r.dims)
                if (x == d) return true;
    return false;
}

const std::vector<ArchTable>& arch_tables() {
    static const std::vector<ArchTable> tables = make_tables();
    return tables;
}

const ArchTable* find_arch_table(const std::string& arch) {
    for (const ArchTable& t : arch_tables())
        if (t.name == arch) return &t;
    return nullptr;
}

}  // namespace vkllm::random_model
