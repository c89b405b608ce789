// The LayerNorm families: GPT-2, the encoder BERT, Falcon (the parallel block) and Jais (ALiBi).
#include "random_model/arch_table_families.h"
#include "random_model/arch_table_parts.h"

namespace vkllm::random_model {
namespace {
using D = Dim;
}  // namespace

// GPT-2: LayerNorm (weight and bias), learned position embeddings, fused q/k/v with bias,
// biased output and MLP projections, GELU MLP, no RoPE. The converter writes no
// head_count_kv (MHA) and no rope keys.
ArchTable gpt2_table() {
    ArchTable gpt2;
    gpt2.name = "gpt2";
    gpt2.globals = joined({
        {{"token_embd.weight", {D::Embd, D::Vocab}, Init::Embedding},
         {"position_embd.weight", {D::Embd, D::Ctx}, Init::Embedding}},
        layer_norm("output_norm"),
        {{"output.weight", {D::Embd, D::Vocab}, Init::Matrix, Presence::Untied}},
    });
    gpt2.per_layer = joined({
        layer_norm("blk.{L}.attn_norm"),
        linear_with_bias("blk.{L}.attn_qkv", D::Embd, D::QkvProj),
        linear_with_bias("blk.{L}.attn_output", D::QProj, D::Embd),
        layer_norm("blk.{L}.ffn_norm"),
        linear_with_bias("blk.{L}.ffn_up", D::Embd, D::Ff),
        linear_with_bias("blk.{L}.ffn_down", D::Ff, D::Embd),
    });
    gpt2.norm = NormKind::LayerNorm;
    gpt2.uses_rope = false;
    gpt2.head_dim_free = false;
    gpt2.writes_head_count_kv = false;
    return gpt2;
}

// BERT (encoder): token + token type + learned position embeddings, LayerNorm of their sum,
// bidirectional attention with biases, post-norm of each residual sum, GELU MLP with
// biases; no output norm, no output.weight (llama.cpp reads none). CLS pooling.
ArchTable bert_table() {
    ArchTable bert;
    bert.name = "bert";
    bert.globals = joined({
        {{"token_embd.weight", {D::Embd, D::Vocab}, Init::Embedding},
         {"token_types.weight", {D::Embd, D::TokenTypes}, Init::Embedding},
         {"position_embd.weight", {D::Embd, D::Ctx}, Init::Embedding}},
        layer_norm("token_embd_norm"),
    });
    bert.per_layer = joined({
        linear_with_bias("blk.{L}.attn_q", D::Embd, D::QProj),
        linear_with_bias("blk.{L}.attn_k", D::Embd, D::KvProj),
        linear_with_bias("blk.{L}.attn_v", D::Embd, D::KvProj),
        linear_with_bias("blk.{L}.attn_output", D::QProj, D::Embd),
        layer_norm("blk.{L}.attn_output_norm"),
        linear_with_bias("blk.{L}.ffn_up", D::Embd, D::Ff),
        linear_with_bias("blk.{L}.ffn_down", D::Ff, D::Embd),
        layer_norm("blk.{L}.layer_output_norm"),
    });
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
    return bert;
}

// Falcon: LayerNorm, the parallel block (attention and MLP read the same normed input; with
// --two-norms attention reads its own attn_norm_2, Falcon-40B), fused QKV and output without
// biases, NeoX RoPE, a plain GELU MLP without biases, output tied unless output.weight.
ArchTable falcon_table() {
    ArchTable falcon;
    falcon.name = "falcon";
    falcon.globals = joined({
        {{"token_embd.weight", {D::Embd, D::Vocab}, Init::Embedding}},
        layer_norm("output_norm"),
        {{"output.weight", {D::Embd, D::Vocab}, Init::Matrix, Presence::Untied}},
    });
    falcon.per_layer = joined({layer_norm("blk.{L}.attn_norm"), layer_norm("blk.{L}.attn_norm_2", Presence::TwoNorms)});
    falcon.per_layer = concat(falcon.per_layer, {
        {"blk.{L}.attn_qkv.weight", {D::Embd, D::QkvProj}, Init::Matrix},
        {"blk.{L}.attn_output.weight", {D::QProj, D::Embd}, Init::Matrix},
        {"blk.{L}.ffn_up.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_down.weight", {D::Ff, D::Embd}, Init::Matrix},
    });
    falcon.norm = NormKind::LayerNorm;
    falcon.head_dim_free = false;  // llama.cpp: wo is {n_embd, n_embd}
    return falcon;
}

// Jais: LayerNorm, fused QKV with biases, ALiBi (attention.max_alibi_bias 8) and no position
// encoding, SwiGLU with biases, an output.weight always.
ArchTable jais_table() {
    ArchTable jais;
    jais.name = "jais";
    jais.globals = joined({
        {{"token_embd.weight", {D::Embd, D::Vocab}, Init::Embedding}},
        layer_norm("output_norm"),
        {{"output.weight", {D::Embd, D::Vocab}, Init::Matrix}},
    });
    jais.per_layer = joined({
        layer_norm("blk.{L}.attn_norm"),
        linear_with_bias("blk.{L}.attn_qkv", D::Embd, D::QkvProj),
        linear_with_bias("blk.{L}.attn_output", D::QProj, D::Embd),
        layer_norm("blk.{L}.ffn_norm"),
        linear_with_bias("blk.{L}.ffn_gate", D::Embd, D::Ff),
        linear_with_bias("blk.{L}.ffn_up", D::Embd, D::Ff),
        linear_with_bias("blk.{L}.ffn_down", D::Ff, D::Embd),
    });
    jais.norm = NormKind::LayerNorm;
    jais.uses_rope = false;
    jais.head_dim_free = false;  // llama.cpp: wo is {n_embd, n_embd}
    jais.never_tied = true;
    jais.extra_metadata = {{"attention.max_alibi_bias", gguf::Value::from_f32(8.0f)}};
    return jais;
}

}  // namespace vkllm::random_model
