// Model families as data: one `Family` row per `general.architecture` (families.cpp), read by
// the one spec reader (spec.cpp). A row holds the family's defaults (norms, positions,
// attention, FFN, experts) and its named quirks: behaviour that llama.cpp gives one family, as a
// flag or a value in the row rather than a test of the architecture's name in shared code.
// Adding a family that needs only existing features is adding a row (docs/adding-an-architecture.md).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "gguf/quant_mix.h"
#include "model/spec.h"

namespace vkllm::model {

// Whether each layer has a part: never, always, or when the file has the tensor that holds it
// (layer 0's, or the model's for token types).
enum class Has { No, Yes, IfTensor };

// Which layers `<arch>.attention.sliding_window` applies to.
enum class WindowRule {
    None,          // none: the key is not read (Phi-3's files carry one that llama.cpp ignores)
    EveryLayer,    // every layer, when the window is > 0
    Pattern,       // the local layers of `attention.sliding_window_pattern` (an array, or a period n:
                   // layer il is local when il % n < n - 1; 0: every layer), else of `window_period`
    PatternIfSet,  // as Pattern, only when the window is > 0
};

// How the router's logits become expert weights.
enum class Gating {
    Softmax,
    Sigmoid,
    FromKey,  // `expert_gating_func`: 2 sigmoid, anything else (default 1) softmax
};

// Whether the chosen experts' weights are renormalised to sum 1.
enum class TopkNorm {
    No,
    Yes,
    FromKey,  // `expert_weights_norm` (bool, default false)
};

// The family's token mixer besides attention.
enum class Mixer {
    Attention,  // attention only
    Mamba2,     // Mamba-2 state-space mixers (`ssm.*` keys, an SsmSpec), on the layers `layers` says
    Mamba1,     // Mamba-1 selective-scan mixers (`ssm.*` keys without a group count), likewise
    Rwkv7,      // RWKV-7's time mix (`wkv.head_size`, the lora ranks: an RwkvSpec) and its channel
                // mix as every layer's FFN
    ShortConv,  // LFM2's gated short convolutions (`shortconv.l_cache`: a ShortConvSpec), on the
                // layers `layers` says
    GatedDeltaNet,  // Gated DeltaNet (`ssm.*` keys: an SsmSpec with delta_net), on the layers
                    // `layers` says
};

// Which parts each layer has (its LayerSpec's mixer and has_ffn), as llama.cpp decides per layer
// from the file's per-layer arrays (`attention.head_count_kv`, `feed_forward_length`, each once
// or one value per layer).
enum class LayerLayout {
    // Every layer alike: attention then an FFN, or (mixer Mamba2) the state-space mixer alone.
    Uniform,
    // The family's mixer where the layer's head_count_kv is 0, attention elsewhere; an FFN after
    // either on every layer (granitehybrid).
    MixerWhereNoKvHeads,
    // One part per layer: an FFN alone where the layer's feed_forward_length is > 0, else the
    // family's mixer where its head_count_kv is 0, else attention (nemotron_h). Every layer's
    // norm is attn_norm.
    OnePartPerLayer,
    // Every layer has attention and the family's mixer side by side, both reading the layer
    // input normalised by attn_norm and both adding into it, then an FFN (falcon-h1; the mixer
    // is LayerSpec::ssm with ssm_beside_attention).
    MixerBesideAttention,
    // The family's mixer on the recurrent layers, attention on the others, an FFN after either:
    // `attention.recurrent_layers` (one bool per layer) when the file has it, else every
    // `full_attention_interval`-th layer (default 4) is attention (qwen3next, qwen35).
    MixerWhereRecurrent,
};

struct Family {
    std::string_view arch;  // general.architecture
    Mixer mixer = Mixer::Attention;
    LayerLayout layers = LayerLayout::Uniform;

    // --- Norms -----------------------------------------------------------------------------
    NormKind norm = NormKind::RMSNorm;
    // Epsilon when the file has none (`attention.layer_norm_rms_epsilon` for RMSNorm,
    // `attention.layer_norm_epsilon` for LayerNorm).
    double norm_eps = 1e-5;
    NormPlacement placement = NormPlacement::Pre;
    std::string_view ffn_norm_tensor = "ffn_norm";  // the norm before the FFN (gpt-oss: post_attention_norm)
    // The norm before the FFN is the tensor `blk.N.<ffn_norm_tensor>` itself, without `.weight`
    // (Falcon-H1: llama.cpp and its converter name it so).
    bool ffn_norm_unsuffixed = false;
    // The parallel block: attention and the FFN read the same layer input and both add into the
    // residual stream (LayerSpec::parallel; Falcon).
    bool parallel = false;
    // IfTensor: where layer 0 has `attn_norm_2`, attention reads its own norm of the layer input
    // (attn_norm_2) and the FFN reads attn_norm (Falcon-40B's two-norm parallel block).
    Has attn_norm_2 = Has::No;

    // --- Embeddings and output ---------------------------------------------------------------
    bool embd_scale_sqrt_n_embd = false;  // token embeddings times sqrt(n_embd) (Gemma)
    // Granite's multipliers, each read when present: `embedding_scale` (embeddings times it),
    // `residual_scale` (each block's output times it before the residual add), `logit_scale`
    // (logits divided by it), `attention.scale` (the attention's kq scale instead of
    // 1/sqrt(head_dim)); 0 or absent: not applied, as llama.cpp does.
    bool granite_multipliers = false;
    bool learned_positions = false;       // `position_embd` added to the token embeddings, no RoPE
    bool embd_norm = false;               // LayerNorm of the summed embeddings (`token_embd_norm`)
    Has token_types = Has::No;            // token type 0's row (`token_types`) added to every token
    bool final_norm = true;               // false: the vocabulary projection reads the residual stream
    // The final norm's tensor: LFM2's converter writes it as `token_embd_norm` (llama.cpp's
    // LLM_TENSOR_OUTPUT_NORM_LFM2), every other family as `output_norm`.
    std::string_view output_norm_tensor = "output_norm";
    bool pooling_key = false;             // `pooling_type` read (default 0, none)
    // `final_logit_softcapping` with this default; nullopt: not read (no soft-cap).
    std::optional<double> final_softcap;

    // --- Attention ---------------------------------------------------------------------------
    // `attention.causal` with this default; nullopt: not read, every layer causal.
    std::optional<bool> causal_key;
    bool fused_qkv = false;  // one `attn_qkv` tensor, rows [q; k; v]
    Has bias_qkv = Has::No;  // IfTensor: layer 0's `attn_q.bias`
    Has bias_o = Has::No;    // IfTensor: layer 0's `attn_output.bias`
    // QK-norm of every layer. L2AfterRope acts after RoPE, so a layer without RoPE has none.
    QkNorm qk_norm = QkNorm::None;
    bool sinks = false;  // learned per-head sink logits (`attn_sinks`)
    // `attn_logit_softcapping` with this default; nullopt: not read (no soft-cap).
    std::optional<double> attn_softcap;
    // Gated attention: the q projection holds a query and a gate per head, and the output is
    // multiplied by sigmoid(gate) before the output projection (AttentionSpec::gated).
    bool gated_attention = false;
    // `attention.max_alibi_bias` read (default 0: no ALiBi): ALiBi's distance penalty per head.
    bool alibi_key = false;
    // The kq scale is 1/head_dim instead of 1/sqrt(head_dim) (Jais, muP-style).
    bool kq_scale_inverse_head_dim = false;

    // --- Positions -----------------------------------------------------------------------------
    bool rope = true;         // false: no RoPE on any layer
    bool rope_switch_key = false;  // `rope.scaling.finetuned` (default true) switches RoPE on every layer (Granite)
    bool rope_neox = false;   // NeoX pairs (i, i + n_dims/2); else adjacent pairs (llama.cpp's NORM)
    bool longrope = false;    // `rope_factors_long`/`rope_factors_short` tensors select LongRoPE
    // > 0: layer il has no RoPE (NoPE) when (il + 1) % nope_period == 0; no key (llama.cpp's constant).
    int nope_period = 0;
    // > 0: NoPE layers scale queries by log(floor((pos + 1) / floor) + 1) * scale + 1.
    int nope_temperature_floor = 0;
    float nope_temperature_scale = 0.0f;

    // --- Sliding windows and chunks ------------------------------------------------------------
    WindowRule windows = WindowRule::None;
    int window = 0;                // `attention.sliding_window` when absent ...
    bool window_required = false;  // ... unless the key is required
    int window_period = 0;         // Pattern: the local/global period when the file has no pattern
    // Windowed layers: RoPE base `rope.freq_base_swa` with this default (<= 0: the global base);
    // nullopt: not read.
    std::optional<double> local_rope_base;
    bool local_rope_unscaled = false;  // windowed layers: RoPE without position scaling (Gemma 3)
    // > 0: chunked attention (keys of the query's chunk only) of this many positions on layers
    // il % chunk_period < chunk_period - 1, unless `attention.sliding_window` is 0 (read as a switch).
    int chunk = 0;
    int chunk_period = 0;

    // --- FFN ---------------------------------------------------------------------------------
    Activation activation = Activation::SiLU;
    bool gated = true;          // act(gate) * up; false: act(up)
    bool fused_gate_up = false; // one `ffn_up` tensor, rows [gate; up]
    Has ffn_bias = Has::No;     // IfTensor: layer 0's `ffn_up.bias`

    // --- Gated DeltaNet -------------------------------------------------------------------------
    // How value heads share key heads (Qwen3-Next repeats each key head for its value heads,
    // Qwen3.5 tiles them), and whether b and alpha come from one ssm_ba grouped per key head.
    DeltaHeadShare delta_share = DeltaHeadShare::Interleaved;
    bool delta_ba_grouped = false;

    // --- Mixture of experts (read when `expert_count` > 0) ------------------------------------
    bool moe = false;                      // the family reads `expert_count` and its MoE keys
    TopkNorm topk_norm = TopkNorm::No;
    bool expert_width_over_topk = false;   // without `expert_feed_forward_length`: n_ff / top_k wide
    bool experts_required = false;         // a file without experts is an error
    Gating gating = Gating::Softmax;
    bool softmax_after_topk = false;       // weights = softmax over the chosen logits (gpt-oss)
    bool router_bias = false;              // `ffn_gate_inp.bias`
    bool expert_bias = false;              // `ffn_{gate,up,down}_exps.bias`
    float swiglu_alpha = 0.0f;             // > 0: clamped SwiGLU with this alpha and limit (gpt-oss)
    float swiglu_limit = 0.0f;
    bool weight_input = false;             // the weight scales the expert's input (Llama 4)
    int shared_experts = 0;                // always-on experts of the experts' width ...
    bool shared_experts_key = false;       // ... or as many as `expert_shared_count` says
    bool shared_expert_width_key = false;  // a shared expert `expert_shared_feed_forward_length` wide where > 0 (Granite)
    // A shared expert with a sigmoid gate (`ffn_gate_inp_shexp`), `expert_shared_feed_forward_length`
    // wide (else feed_forward_length), on every MoE layer (Qwen3-Next, Qwen3.5-MoE).
    bool gated_shared_expert = false;
    bool selection_bias = false;           // `exp_probs_b.bias`, where the layer has it, biases the choice
    bool expert_groups_key = false;        // `expert_group_count`/`expert_group_used_count` (default 1)
    bool moe_interleave_key = false;       // `interleave_moe_layer_step` S (required): MoE when (il + 1) % S == 0
    bool leading_dense_key = false;        // `leading_dense_block_count` dense layers first (default 0)
    bool moe_where_router = false;         // experts only on layers whose file has `ffn_gate_inp` (Jamba)

    // --- Multi-head latent attention ---------------------------------------------------------
    // q/kv LoRA ranks, MLA head sizes, the absorbed form (MQA over the latent) and the
    // `attn_k_b`/`attn_v_b` layout; with YaRN, queries scaled by mscale^2 / sqrt(head size).
    bool mla = false;

    // --- Quirks ------------------------------------------------------------------------------
    // `rope.scaling.yarn_log_multiplier` is stored as 0.1 * mscale_all_dim: the reader divides it
    // by 0.1, and YaRN's magnitude correction uses mscale = mscale_all_dim (llama.cpp's
    // special case for DeepSeek V2).
    bool yarn_log_multiplier_scaled_by_10 = false;
    // > 0: a model of this many layers (Gemma's 27B, as llama.cpp identifies it) scales queries by
    // 1/sqrt(n_embd / n_head) instead of 1/sqrt(head_dim).
    int query_scale_by_embd_at_n_layer = 0;
    // > 0: a model with this many experts (Llama 4 Maverick, as llama.cpp identifies it) has no
    // QK-norm; `expert_count` is then required.
    int no_qk_norm_at_n_expert = 0;
};

// Every supported family, one row each.
const std::vector<Family>& families();
// The row of `arch`, or nullptr.
const Family* find_family(std::string_view arch);

// The architecture quirks of llama.cpp's quantization rules (llama-quantize's mixes) for a file
// of `arch`, also for architectures vkllm does not run; {} when it has none.
gguf::MixArchRules quant_mix_rules(std::string_view arch);

}  // namespace vkllm::model
