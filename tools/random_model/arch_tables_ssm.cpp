// The state-space families (Mamba-2, Mamba) and the hybrids of a mixer and attention (Jamba,
// Nemotron-H, Falcon-H1, Granite 4.0-H) or of short convolutions and attention (LFM2).
#include "random_model/arch_table_families.h"
#include "random_model/arch_table_parts.h"

namespace vkllm::random_model {
namespace {
using D = Dim;
}  // namespace

// Mamba-2 (llama.cpp's src/models/mamba2.cpp): no attention, no FFN; each layer is RMSNorm
// (attn_norm), then the SSM mixer.
ArchTable mamba2_table() {
    ArchTable mamba2;
    mamba2.name = "mamba2";
    mamba2.globals = without(embeddings_and_head(), Presence::Llama3Rope);
    mamba2.per_layer = concat({{"blk.{L}.attn_norm.weight", {D::Embd}, Init::Norm}}, mamba2_mixer(Presence::Always));
    mamba2.uses_rope = false;
    mamba2.writes_head_count_kv = false;
    mamba2.ssm = true;
    return mamba2;
}

// Mamba (Mamba-1, llama.cpp's src/models/mamba.cpp, build_mamba_layer): each layer RMSNorm
// (attn_norm), then ssm_in [n_embd -> x | z], the causal conv1d over x (weight and bias), x_proj
// (ssm_x [d_inner -> dt_rank | B | C]), dt_proj (ssm_dt weight [dt_rank -> d_inner] and bias),
// the scan with A [d_state, d_inner] (-exp(A_log)) and D [d_inner], the gate, ssm_out.
ArchTable mamba_table() {
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
    return mamba;
}

// Jamba (llama.cpp's src/models/jamba.cpp): attn_norm, then Mamba-1 ('M', with ssm_dt_norm,
// ssm_b_norm and ssm_c_norm: RMS norms of dt, B and C) or attention without RoPE ('*', q of
// n_embd), then ffn_norm and a SwiGLU FFN, or with --n-expert experts on every
// --moe-layer-step-th layer (default 2: layers 1, 3, ..., as Jamba's expert period 2, offset
// 1); llama.cpp finds those layers by their ffn_gate_inp, so no step key is written.
ArchTable jamba_table() {
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
    return jamba;
}

// Nemotron-H (llama.cpp's src/models/nemotron-h.cpp): one part per layer after its RMSNorm
// (attn_norm): a Mamba-2 mixer ('M'), attention without RoPE ('*', attn_q/k/v/output), or an
// MLP alone ('-', ffn_up and ffn_down: relu(up x)^2, no gate). The converter writes
// head_count_kv and feed_forward_length per layer (0 where the layer has no attention / no
// MLP), key_length and value_length, and llama.cpp requires attention.layer_norm_epsilon.
ArchTable nemotron_h_table() {
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
    return nemotron_h;
}

// Falcon-H1 (llama.cpp's src/models/falcon-h1.cpp): every layer has attention (NeoX RoPE) and
// the Mamba-2 mixer side by side, both after attn_norm, then a SwiGLU FFN after ffn_norm,
// which llama.cpp (and the converter) names `blk.N.ffn_norm` without `.weight`. The muP
// multipliers are folded into the weights by the converter, so none is written.
ArchTable falcon_h1_table() {
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
    return falcon_h1;
}

// LFM2 (llama.cpp's src/models/lfm2.cpp): layers 'C' (a gated short convolution:
// shortconv.in_proj to B | C | u, the depthwise conv of l_cache taps, kept F32, out_proj) or
// '*' (attention with per-head q/k RMSNorms, NeoX RoPE), both after attn_norm, then a SwiGLU
// FFN after ffn_norm on every layer. head_count_kv per layer marks the attention layers (0
// elsewhere); the final norm is written as token_embd_norm (llama.cpp's name for it).
ArchTable lfm2_table() {
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
    return lfm2;
}

// Granite 4.0-H (llama.cpp's src/models/granite-hybrid.cpp): RMSNorm (attn_norm), then a
// Mamba-2 mixer ('M') or attention with RoPE on adjacent pairs ('*'), then ffn_norm and a
// SwiGLU FFN, or with --n-expert softmax-routed experts plus a shared expert
// (`expert_shared_feed_forward_length`, here n_ff). Granite's embedding multiplier and
// attention scale are written (Granite 4.0's 12 and 1/head_dim-like 0.0625).
ArchTable granitehybrid_table() {
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
    return granitehybrid;
}

}  // namespace vkllm::random_model
