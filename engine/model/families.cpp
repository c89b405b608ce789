// The family table: every architecture vkllm runs, as one row of data (the fields are described
// in families.h). This is the only file in engine/ that names architectures or holds a number
// that belongs to one family (tests/model/test_family_table.cpp checks the names). Each row
// follows llama.cpp's src/models/<arch>.cpp (its load_arch_hparams and graph), and each family
// has a random-weight golden model checked against llama.cpp (tests/golden/families, moe, bert).
#include "model/families.h"

namespace vkllm::model {
namespace {

std::vector<Family> make_families() {
    return {
        // Llama 1/2/3, TinyLlama, SmolLM, and what llama.cpp's converter writes for Mistral and
        // Mixtral: RMSNorm before attention and FFN, RoPE on adjacent pairs (the converter
        // permutes Q/K for it), SwiGLU. Mixtral: softmax over all experts, top-k, renormalised.
        // A window on every layer where the metadata gives one (llama.cpp reads none for
        // `llama` and its converter writes none, so files in the wild rarely have it).
        {
            .arch = "llama",
            .windows = WindowRule::EveryLayer,
            .moe = true,
            .topk_norm = TopkNorm::Yes,
        },
        // GPT-2: LayerNorm with bias, learned absolute positions, fused QKV with bias, GELU MLP.
        {
            .arch = "gpt2",
            .norm = NormKind::LayerNorm,
            .learned_positions = true,
            .fused_qkv = true,
            .bias_qkv = Has::Yes,
            .bias_o = Has::Yes,
            .rope = false,
            .activation = Activation::GeluTanh,
            .gated = false,
            .ffn_bias = Has::Yes,
        },
        // Falcon (7B/40B/180B): LayerNorm with bias, the parallel block (attention and the MLP read
        // one normed input and add into the residual together; 40B's attention has its own norm,
        // attn_norm_2), fused QKV without biases, multi-query (or grouped) attention, NeoX RoPE,
        // a plain GELU MLP without biases; the output tied to token_embd without output.weight.
        {
            .arch = "falcon",
            .norm = NormKind::LayerNorm,
            .parallel = true,
            .attn_norm_2 = Has::IfTensor,
            .fused_qkv = true,
            .rope_neox = true,
            .activation = Activation::GeluTanh,
            .gated = false,
        },
        // Jais: LayerNorm with bias, fused QKV with biases, ALiBi instead of any position encoding
        // (`attention.max_alibi_bias`; llama.cpp reads no position_embd), kq scale 1/head_dim,
        // SwiGLU with biases on gate, up and down.
        {
            .arch = "jais",
            .norm = NormKind::LayerNorm,
            .fused_qkv = true,
            .bias_qkv = Has::Yes,
            .bias_o = Has::Yes,
            .alibi_key = true,
            .kq_scale_inverse_head_dim = true,
            .rope = false,
            .ffn_bias = Has::Yes,
        },
        // Qwen2: Llama with q/k/v biases and NeoX RoPE.
        {
            .arch = "qwen2",
            .norm_eps = 1e-6,
            .bias_qkv = Has::Yes,
            .rope_neox = true,
        },
        // Qwen3: per-head QK-norm instead of Qwen2's biases.
        {
            .arch = "qwen3",
            .norm_eps = 1e-6,
            .qk_norm = QkNorm::PerHead,
            .rope_neox = true,
        },
        // Gemma 2: embeddings times sqrt(n_embd), sandwich norms, GeGLU, NeoX RoPE, attention and
        // final soft-caps, a window on every other layer (0, 2, 4, ...). The converter stores
        // RMSNorm weights as (1 + w).
        {
            .arch = "gemma2",
            .norm_eps = 1e-6,
            .placement = NormPlacement::Sandwich,
            .embd_scale_sqrt_n_embd = true,
            .final_softcap = 30.0,
            .attn_softcap = 50.0,
            .rope_neox = true,
            .windows = WindowRule::Pattern,
            .window = 4096,
            .window_period = 2,
            .local_rope_base = -1.0,
            .activation = Activation::GeluTanh,
            .query_scale_by_embd_at_n_layer = 46,  // Gemma 2 27B
        },
        // Gemma 3: Gemma 2 without the attention soft-cap (a final one only when the file has it),
        // per-head QK-norm, five local layers to one global; local layers use their own RoPE base
        // (default 10000) and no position scaling.
        {
            .arch = "gemma3",
            .norm_eps = 1e-6,
            .placement = NormPlacement::Sandwich,
            .embd_scale_sqrt_n_embd = true,
            .final_softcap = 0.0,
            .qk_norm = QkNorm::PerHead,
            .rope_neox = true,
            .windows = WindowRule::Pattern,
            .window = 0,
            .window_period = 6,
            .local_rope_base = 10000.0,
            .local_rope_unscaled = true,
            .activation = Activation::GeluTanh,
            .query_scale_by_embd_at_n_layer = 62,  // Gemma 3 27B
        },
        // OLMo 2: RMSNorm after attention and after the FFN (not before), QK-norm over the whole
        // q/k projections, NeoX RoPE. OLMo 3 files carry a sliding window with its layer pattern.
        {
            .arch = "olmo2",
            .norm_eps = 1e-6,
            .placement = NormPlacement::Post,
            .qk_norm = QkNorm::FullWidth,
            .rope_neox = true,
            .windows = WindowRule::PatternIfSet,
            .window_period = 4,
        },
        // Phi-3: fused QKV and fused gate/up, NeoX RoPE (possibly partial), LongRoPE factor
        // tensors. Files carry `sliding_window` (2047), which llama.cpp ignores; so does vkllm.
        {
            .arch = "phi3",
            .fused_qkv = true,
            .rope_neox = true,
            .longrope = true,
            .fused_gate_up = true,
        },
        // SmolLM3: the Llama layout with no RoPE on every 4th layer (3, 7, 11, ...): a constant in
        // llama.cpp (n_no_rope_layer_step), no key.
        {
            .arch = "smollm3",
            .norm_eps = 1e-6,
            .nope_period = 4,
        },
        // Qwen3-MoE: Qwen3's attention with a MoE FFN, softmax gating renormalised; without
        // expert_feed_forward_length an expert is feed_forward_length / expert_used_count wide.
        {
            .arch = "qwen3moe",
            .norm_eps = 1e-6,
            .qk_norm = QkNorm::PerHead,
            .rope_neox = true,
            .moe = true,
            .topk_norm = TopkNorm::Yes,
            .expert_width_over_topk = true,
        },
        // OLMoE: pre-norm Llama layout with QK-norm over the whole q/k projections, NeoX RoPE and a
        // MoE FFN whose softmax weights are not renormalised.
        {
            .arch = "olmoe",
            .qk_norm = QkNorm::FullWidth,
            .rope_neox = true,
            .moe = true,
        },
        // gpt-oss (llama.cpp's LLM_ARCH_OPENAI_MOE): biased attention with learned sink logits,
        // a window on even layers, NeoX RoPE (YaRN in the real models); MoE on every layer with a
        // biased router, softmax over the chosen logits, biased experts with the clamped SwiGLU
        // (alpha 1.702, limit 7). Its pre-FFN norm is named post_attention_norm.
        {
            .arch = "gpt-oss",
            .ffn_norm_tensor = "post_attention_norm",
            .bias_qkv = Has::Yes,
            .bias_o = Has::Yes,
            .sinks = true,
            .rope_neox = true,
            .windows = WindowRule::Pattern,
            .window_required = true,
            .window_period = 2,
            .local_rope_base = -1.0,
            .moe = true,
            .experts_required = true,
            .softmax_after_topk = true,
            .router_bias = true,
            .expert_bias = true,
            .swiglu_alpha = 1.702f,
            .swiglu_limit = 7.0f,
        },
        // Llama 4: every 4th layer NoPE with query temperature (floor 8192, scale 0.1), the others
        // RoPE with an unweighted QK-norm after it and chunked attention (chunks of 8192; the
        // key `attention.sliding_window` = 0 turns chunking off); MoE on every
        // interleave_moe_layer_step-th layer (dense FFN elsewhere): top-k by router logit, sigmoid
        // weight scaling the expert's input, plus one shared expert. Maverick (128 experts) has
        // no QK-norm.
        {
            .arch = "llama4",
            .qk_norm = QkNorm::L2AfterRope,
            .nope_period = 4,
            .nope_temperature_floor = 8192,
            .nope_temperature_scale = 0.1f,
            .chunk = 8192,
            .chunk_period = 4,
            .moe = true,
            .gating = Gating::Sigmoid,
            .weight_input = true,
            .shared_experts = 1,
            .moe_interleave_key = true,
            .no_qk_norm_at_n_expert = 128,
        },
        // DeepSeek V2/V3 (and Kimi K2): MLA attention (absorbed form), YaRN with DeepSeek's
        // mscale, leading dense layers, then MoE layers with shared experts and V3's routing
        // (sigmoid or softmax gating, exp_probs_b selection bias, group-limited top-k,
        // renormalisation, scale).
        {
            .arch = "deepseek2",
            .norm_eps = 1e-6,
            .moe = true,
            .topk_norm = TopkNorm::FromKey,
            .gating = Gating::FromKey,
            .shared_experts_key = true,
            .selection_bias = true,
            .expert_groups_key = true,
            .leading_dense_key = true,
            .mla = true,
            .yarn_log_multiplier_scaled_by_10 = true,
        },
        // EXAONE 3.0/3.5 (llama.cpp's src/models/exaone.cpp): the Llama layout (pre-RMSNorm,
        // SwiGLU, optional Llama 3 `rope_freqs`) with NeoX RoPE; no biases, no experts.
        {
            .arch = "exaone",
            .rope_neox = true,
        },
        // Mamba-2 (llama.cpp's src/models/mamba2.cpp, build_mamba2_layer): every layer RMSNorm
        // then the state-space mixer (ssm_in, the short conv1d, the selective scan, the gate, the
        // grouped RMSNorm, ssm_out); no attention, no FFN, no positions. Epsilon required.
        {
            .arch = "mamba2",
            .mixer = Mixer::Mamba2,
            .rope = false,
        },
        // Mamba (llama.cpp's src/models/mamba.cpp, build_mamba_layer): every layer RMSNorm then the
        // Mamba-1 mixer (ssm_in to x | z, the short conv1d over x, x_proj to dt | B | C, dt_proj,
        // the selective scan with a decay per channel and state, the gate, ssm_out); no attention,
        // no FFN, no positions. Epsilon required.
        {
            .arch = "mamba",
            .mixer = Mixer::Mamba1,
            .rope = false,
        },
        // Jamba (llama.cpp's src/models/jamba.cpp): Mamba-1 where a layer's head_count_kv is 0
        // (with RMS norms of dt, B and C, weighted by ssm_dt_norm, ssm_b_norm, ssm_c_norm), attention
        // without positions elsewhere; then ffn_norm and a SwiGLU FFN, or on the layers whose file
        // has a router (`ffn_gate_inp`) softmax-routed experts, not renormalised.
        {
            .arch = "jamba",
            .mixer = Mixer::Mamba1,
            .layers = LayerLayout::MixerWhereNoKvHeads,
            .rope = false,
            .moe = true,
            .moe_where_router = true,
        },
        // Nemotron-H (llama.cpp's src/models/nemotron-h.cpp): a hybrid with one part per layer, chosen
        // from the per-layer arrays: an MLP where feed_forward_length > 0 (ungated, relu^2), else a
        // Mamba-2 mixer where head_count_kv is 0, else attention without positions (no RoPE, kq
        // scale 1/sqrt(head_dim)); every layer normalised by attn_norm (RMSNorm).
        {
            .arch = "nemotron_h",
            .mixer = Mixer::Mamba2,
            .layers = LayerLayout::OnePartPerLayer,
            .rope = false,
            .activation = Activation::ReluSqr,
            .gated = false,
        },
        // Granite 4.0-H (llama.cpp's src/models/granite-hybrid.cpp): Mamba-2 where a layer's
        // head_count_kv is 0, attention elsewhere, a SwiGLU FFN (or softmax-routed experts,
        // renormalised, with a shared expert of `expert_shared_feed_forward_length`) after either;
        // Granite's embedding, residual, attention and logit multipliers; RoPE on adjacent pairs
        // unless `rope.scaling.finetuned` is false (Granite 4.0-H's converter writes false).
        {
            .arch = "granitehybrid",
            .mixer = Mixer::Mamba2,
            .layers = LayerLayout::MixerWhereNoKvHeads,
            .granite_multipliers = true,
            .rope_switch_key = true,
            .moe = true,
            .topk_norm = TopkNorm::Yes,
            .shared_expert_width_key = true,
        },
        // Falcon-H1 (llama.cpp's src/models/falcon-h1.cpp): every layer has attention (NeoX RoPE,
        // kq scale 1/sqrt(head_dim), biases where the file has them) and a Mamba-2 mixer side by
        // side, both reading the layer input normalised by attn_norm, their outputs added to it;
        // then ffn_norm (the tensor `blk.N.ffn_norm`, no `.weight`) and a SwiGLU FFN. The converter folds Falcon-H1's muP multipliers into the
        // weights, so the file carries none.
        {
            .arch = "falcon-h1",
            .mixer = Mixer::Mamba2,
            .layers = LayerLayout::MixerBesideAttention,
            .ffn_norm_unsuffixed = true,
            .bias_qkv = Has::IfTensor,
            .bias_o = Has::IfTensor,
            .rope_neox = true,
            .ffn_bias = Has::IfTensor,
        },
        // LFM2 (llama.cpp's src/models/lfm2.cpp): a gated short convolution where a layer's
        // head_count_kv is 0, attention elsewhere (RMS QK-norm per head, NeoX RoPE, GQA, a sliding
        // window on the attention layers when `attention.sliding_window` is > 0); then ffn_norm and
        // a SwiGLU FFN on every layer. The final norm is the file's `token_embd_norm`.
        {
            .arch = "lfm2",
            .mixer = Mixer::ShortConv,
            .layers = LayerLayout::MixerWhereNoKvHeads,
            .output_norm_tensor = "token_embd_norm",
            .qk_norm = QkNorm::PerHead,
            .rope_neox = true,
            .windows = WindowRule::EveryLayer,
        },
        // Qwen3.5 (llama.cpp's src/models/qwen35.cpp): Gated DeltaNet on the recurrent layers
        // (`attention.recurrent_layers`, else all but every `full_attention_interval`-th): attn_qkv
        // into the causal conv1d with SiLU, q and k L2-normalised, key heads tiled over the value
        // heads, beta = sigmoid(ssm_beta x), g = softplus(ssm_alpha x + dt_bias) * ssm_a, the
        // gated delta rule, RMSNorm(ssm_norm) * silu(attn_gate x), ssm_out. The other layers: gated
        // attention (attn_q holds query and gate per head; output * sigmoid(gate)), per-head
        // QK-norm, NeoX RoPE over `rope.dimension_count` dims (IMRoPE with every section at the
        // text position). Every layer then post_attention_norm and a SwiGLU FFN.
        {
            .arch = "qwen35",
            .mixer = Mixer::GatedDeltaNet,
            .layers = LayerLayout::MixerWhereRecurrent,
            .norm_eps = 1e-6,
            .ffn_norm_tensor = "post_attention_norm",
            .qk_norm = QkNorm::PerHead,
            .gated_attention = true,
            .rope_neox = true,
            .delta_share = DeltaHeadShare::Tiled,
        },
        // Qwen3.5-MoE (llama.cpp's src/models/qwen35moe.cpp): Qwen3.5's layers with experts after
        // every layer: softmax routing, top-k renormalised, experts feed_forward_length / top_k wide
        // without `expert_feed_forward_length`, plus a shared expert scaled by
        // sigmoid(ffn_gate_inp_shexp x).
        {
            .arch = "qwen35moe",
            .mixer = Mixer::GatedDeltaNet,
            .layers = LayerLayout::MixerWhereRecurrent,
            .norm_eps = 1e-6,
            .ffn_norm_tensor = "post_attention_norm",
            .qk_norm = QkNorm::PerHead,
            .gated_attention = true,
            .rope_neox = true,
            .delta_share = DeltaHeadShare::Tiled,
            .moe = true,
            .topk_norm = TopkNorm::Yes,
            .expert_width_over_topk = true,
            .experts_required = true,
            .gated_shared_expert = true,
        },
        // Qwen3-Next (llama.cpp's src/models/qwen3next.cpp): as Qwen3.5-MoE, but each key head is
        // repeated for its value heads (not tiled), b and alpha come from one ssm_ba grouped per
        // key head ([b | alpha] of its value heads), and RoPE is plain NeoX.
        {
            .arch = "qwen3next",
            .mixer = Mixer::GatedDeltaNet,
            .layers = LayerLayout::MixerWhereRecurrent,
            .norm_eps = 1e-6,
            .ffn_norm_tensor = "post_attention_norm",
            .qk_norm = QkNorm::PerHead,
            .gated_attention = true,
            .rope_neox = true,
            .delta_share = DeltaHeadShare::Interleaved,
            .delta_ba_grouped = true,
            .moe = true,
            .topk_norm = TopkNorm::Yes,
            .expert_width_over_topk = true,
            .experts_required = true,
            .gated_shared_expert = true,
        },
        // RWKV-7 "Goose" (llama.cpp's src/models/rwkv7.cpp): LayerNorm of the embeddings (ln0:
        // token_embd_norm with its bias), then every layer LayerNorm and the time mix (token shift,
        // the four loras, the generalized delta rule over a wkv state per head), attn_norm_2 and
        // the channel mix (token shift, relu(W_key x)^2, W_value) as its FFN; LayerNorm with bias
        // before the head. No attention, no positions; the state is RecurrentState's.
        {
            .arch = "rwkv7",
            .mixer = Mixer::Rwkv7,
            .norm = NormKind::LayerNorm,
            .ffn_norm_tensor = "attn_norm_2",
            .embd_norm = true,
            .rope = false,
            .activation = Activation::ReluSqr,
            .gated = false,
        },
        // BERT, bge, MiniLM (llama.cpp's `bert`), the encoder: learned absolute positions plus
        // token type 0, LayerNorm of the embeddings, bidirectional attention (attention.causal,
        // default false), biased projections where the file has them, post-norm of each residual
        // sum (attn_output_norm, layer_output_norm), a GELU MLP, no output norm, pooling from the
        // file. The output projection is tied to token_embd (files carry no MLM head).
        {
            .arch = "bert",
            .norm = NormKind::LayerNorm,
            .norm_eps = 1e-12,
            .placement = NormPlacement::PostResidual,
            .learned_positions = true,
            .embd_norm = true,
            .token_types = Has::IfTensor,
            .final_norm = false,
            .pooling_key = true,
            .causal_key = false,
            .bias_qkv = Has::IfTensor,
            .bias_o = Has::IfTensor,
            .rope = false,
            .activation = Activation::GeluTanh,
            .gated = false,
            .ffn_bias = Has::IfTensor,
        },
    };
}

}  // namespace

const std::vector<Family>& families() {
    static const std::vector<Family> table = make_families();
    return table;
}

const Family* find_family(std::string_view arch) {
    for (const Family& f : families())
        if (f.arch == arch) return &f;
    return nullptr;
}

gguf::MixArchRules quant_mix_rules(std::string_view arch) {
    // llama.cpp's src/llama-quant.cpp: LLM_ARCH_FALCON's own choices, and LLM_TYPE_70B (which it
    // infers for LLM_ARCH_LLAMA alone: 80 layers with grouped-query attention).
    if (arch == "falcon") return {.falcon_rules = true};
    if (arch == "llama") return {.layers_70b = 80};
    return {};
}

}  // namespace vkllm::model
