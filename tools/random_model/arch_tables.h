// Architectures as data: which tensors a family has (llama.cpp names, shapes in symbolic sizes,
// how each is initialised) and the metadata it adds to the common set. Adding a family means
// adding a table (arch_tables_<kind>.cpp, listed in arch_tables.cpp), not code.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf.h"

namespace vkllm::random_model {

// Symbolic tensor sizes, resolved from the configuration.
enum class Dim {
    Embd,      // n_embd
    Vocab,     // n_vocab (from the vocabulary file)
    Ff,        // n_ff
    QProj,     // n_head * head_dim
    KvProj,    // n_head_kv * head_dim
    HeadDim,   // head_dim
    Head,      // n_head (one value per attention head: gpt-oss's attention sinks)
    RopeHalf,  // rotated dims / 2 (one factor per frequency)
    Ctx,       // n_ctx (learned position embeddings)
    QkvProj,   // QProj + 2 * KvProj (fused q/k/v: rows [q; k; v])
    FfPair,    // 2 * n_ff (fused gate/up: rows [gate; up])
    Expert,    // n_expert (mixture of experts)
    FfExp,     // one expert's FFN width: expert_feed_forward_length where the family has it, else n_ff
    // Multi-head latent attention (deepseek2); head_dim is qk_nope + qk_rope there, rope dims qk_rope.
    QLora,       // q_lora_rank: the compressed query
    KvLora,      // kv_lora_rank: the compressed (latent) key/value
    KvLoraRope,  // kv_lora_rank + qk_rope: attn_kv_a_mqa's output rows [latent; shared rope key]
    QkNope,      // qk_nope_head_dim = head_dim - rope dims
    VHead,       // v_head_dim
    VProj,       // n_head * v_head_dim
    FfShared,    // shared experts' width: n_ff_exp * expert_shared_count
    TokenTypes,  // BERT's token types: tokenizer.ggml.token_type_count of the vocabulary (else 2)
    // Mamba-2 (ssm.*): d_inner, d_state, n_group, the SSM heads (ssm.time_step_rank), d_conv.
    One,          // 1 (ssm_a and ssm_d are {1, n_head})
    SsmInner,     // d_inner
    SsmHead,      // the SSM's heads
    SsmConv,      // d_conv: the short convolution's taps
    SsmConvDim,   // d_inner + 2 * n_group * d_state: the convolved channels x | B | C
    SsmInProj,    // 2 * d_inner + 2 * n_group * d_state + n_head: ssm_in's rows z | x B C | dt
    SsmGroupWidth,  // d_inner / n_group: one group of the gated RMSNorm
    SsmGroups,    // n_group
    // Mamba-1 (mamba): dt's low rank (ssm.time_step_rank) and the projections around it.
    SsmDtRank,    // dt_rank
    SsmXProj,     // dt_rank + 2 * d_state: ssm_x's rows dt_low | B | C
    SsmInnerPair, // 2 * d_inner: Mamba-1's ssm_in rows x | z
    SsmState,     // d_state (ssm_a is {d_state, d_inner})
    // LFM2's short convolution (shortconv.l_cache).
    ConvLCache,   // l_cache: the short convolution's taps
    EmbdTriple,   // 3 * n_embd: shortconv.in_proj's rows B | C | u
    // Gated DeltaNet (qwen35) and gated attention.
    QProjGated,   // 2 * n_head * head_dim: a gated attn_q's rows, [query | gate] per head
    SsmHeadPair,  // 2 * the value heads: qwen3next's ssm_ba rows, [b | alpha] per key head
};

enum class Init {
    Embedding,  // normal, std 1/sqrt(n_embd): each embedding has norm about 1, tied logits std about 1
    Matrix,     // normal, std 1/sqrt(dims[0]): keeps the output variance of a projection at its input's
    Norm,       // 1 + normal(0, 0.1): norm weights near 1 (llama.cpp stores Gemma's already shifted by 1)
    Bias,       // normal(0, 0.1)   (both times TensorRule::scale)
    RopeFreqs,  // Llama 3 per-frequency divisors, computed from the rope scaling (not random)
    LongRopeLong,   // LongRoPE divisors for long contexts: 1 rising geometrically to n_ctx / original context
    LongRopeShort,  // LongRoPE divisors for short contexts: 1 rising linearly to 1.1
    SsmA,       // Mamba-2's A = -exp(A_log) as the converter stores it: -uniform(1, 16) per head
    SsmDtBias,  // Mamba-2's dt_bias: softplus^-1 of a step log-uniform in [0.001, 0.1] (the reference init)
};

enum class Presence {
    Always,
    Untied,      // only when the output projection is not tied to token_embd
    Llama3Rope,  // only with llama3 rope scaling
    LongRope,    // only with longrope rope scaling (Phi-3)
    Dense,       // only in dense layers: without experts (n_expert == 0), or a layer the MoE interleave skips
    Moe,         // only in MoE layers: with experts (n_expert > 0) and, with an interleave step S, layers (il + 1) % S == 0
                 // (and not among the leading dense layers, deepseek2)
    MoeSelectionBias,  // MoE layers with sigmoid gating (DeepSeek-V3's exp_probs_b expert-selection bias)
    QLora,       // only with q_lora_rank > 0 (deepseek2: attn_q_a, attn_q_a_norm, attn_q_b)
    NoQLora,     // only with q_lora_rank == 0 (deepseek2 V2-Lite style: attn_q)
    // Hybrid families, by the layer's character in the --layers pattern:
    SsmLayer,        // 'M': a Mamba-2 mixer
    AttentionLayer,  // '*': attention
    FfnAloneLayer,   // '-': an FFN alone (nemotron_h)
    ConvLayer,       // 'C': a short convolution (lfm2)
    DeltaNetLayer,   // 'D': a Gated DeltaNet mixer (qwen35)
    TwoNorms,        // --two-norms: Falcon-40B's second norm of the layer input (attn_norm_2)
};

// How a hybrid family's layers differ, as the --layers pattern gives them (one character per
// layer). llama.cpp reads which is which from the per-layer arrays `attention.head_count_kv` (0:
// not attention) and `feed_forward_length` (> 0 where an FFN is alone).
enum class Hybrid {
    None,              // every layer alike
    MixerOrAttention,  // 'M' a Mamba-2 mixer or '*' attention, an FFN after either (granitehybrid)
    OnePartPerLayer,   // 'M' a Mamba-2 mixer, '*' attention or '-' an FFN alone (nemotron_h)
    ConvOrAttention,   // 'C' a short convolution or '*' attention, an FFN after either (lfm2)
    // 'D' Gated DeltaNet or '*' attention, an FFN after either (qwen35); the attention layers are
    // every `full_attention_interval`-th, written from the pattern (which must be periodic so).
    DeltaNetOrAttention,
};

// Whether a family's FFN is a mixture of experts.
enum class MoeSupport {
    None,      // dense only
    Optional,  // dense unless --n-expert is given (llama: Mixtral is arch llama with experts)
    Required,  // always experts (qwen3moe, olmoe)
};

enum class NormKind {
    RMSNorm,    // <arch>.attention.layer_norm_rms_epsilon
    LayerNorm,  // <arch>.attention.layer_norm_epsilon (weights and biases)
};

struct TensorRule {
    std::string name;       // per-layer rules: "{L}" stands for the layer index
    std::vector<Dim> dims;  // ggml order: dims[0] is the row length (a matrix's input size)
    Init init = Init::Matrix;
    Presence presence = Presence::Always;
    float scale = 1.0f;     // multiplies the standard deviation of Matrix and Bias initialisations
    bool keep_f32 = false;  // stored F32 whatever --type (llama.cpp's quantizer leaves it; ggml_ssm_conv needs F32)
};

struct ArchTable {
    std::string name;                     // general.architecture
    std::string default_model_name;       // general.name when not given; empty: "random-<arch>"
    std::vector<TensorRule> globals;      // written before the layers
    std::vector<TensorRule> per_layer;    // written for each layer
    NormKind norm = NormKind::RMSNorm;
    float norm_eps = 1e-5f;
    bool uses_rope = true;                // false: no rope.* metadata (GPT-2: learned positions)
    float rope_freq_base = 10000.0f;
    bool partial_rope = false;            // rope.dimension_count may be below head_dim (Phi-3)
    bool head_dim_free = true;            // false: llama.cpp requires n_head * head_dim == n_embd
    bool writes_head_count_kv = true;     // false: no head_count_kv key, MHA only (GPT-2's converter)
    bool mha_only = false;                // llama.cpp's tensor shapes need n_head_kv == n_head (OLMoE's k norm)
    bool always_write_head_dims = false;  // key_length/value_length even when head_dim == n_embd/n_head
    bool always_tied = false;             // llama.cpp never reads an output.weight for this family
    bool never_tied = false;              // llama.cpp requires output.weight (OLMo 2)
    int default_sliding_window = 0;       // > 0: the family has sliding-window layers
    bool optional_sliding_window = false; // attention.sliding_window written only when given (llama4: llama.cpp reads it as an on/off switch)
    // Soft-capping (tanh(x / cap) * cap) keys this family reads: 0 = not read. A default of -1
    // means read but not written unless asked for (Gemma 3's optional final soft-cap).
    float default_attn_softcap = 0.0f;    // <arch>.attn_logit_softcapping
    float default_final_softcap = 0.0f;   // <arch>.final_logit_softcapping
    // Mixture of experts: <arch>.expert_count / expert_used_count when n_expert > 0.
    MoeSupport moe = MoeSupport::None;
    int default_n_expert = 0;             // MoeSupport::Required: when --n-expert is not given
    int default_n_expert_used = 0;        // when --n-expert-used is not given
    bool writes_expert_ff_length = false; // <arch>.expert_feed_forward_length sizes the experts (Qwen MoE, gpt-oss)
    // > 0: the family interleaves dense and MoE layers and writes <arch>.interleave_moe_layer_step
    // (llama4): layer il is MoE when (il + 1) % step == 0 (1: every layer); this is the default step.
    int default_moe_layer_step = 0;
    bool writes_moe_layer_step = true;    // false: the step is not written (Jamba: llama.cpp finds the routers by tensor)
    // DeepSeek-V2/V3 (deepseek2): multi-head latent attention keys (q/kv LoRA ranks, key/value
    // lengths for MLA, head_count_kv 1) and the DeepSeek MoE keys (leading dense layers, shared
    // experts, gating function, expert groups, weight norm and scale, YaRN log multiplier).
    bool mla = false;
    // Mamba-2's selective state space (ssm.conv_kernel, ssm.inner_size, ssm.state_size,
    // ssm.time_step_rank, ssm.group_count) instead of attention: the converter then writes
    // head_count 0 and feed_forward_length 0 ("unused, but seemingly required when loading").
    bool ssm = false;
    bool mamba1 = false;  // the state-space layers are Mamba-1's (ssm.time_step_rank is dt's rank, no groups)
    // Every layer has attention and the Mamba-2 mixer side by side (falcon-h1): the attention
    // keys are written as for a transformer, the ssm.* keys beside them.
    bool ssm_beside_attention = false;
    bool shortconv = false;  // LFM2's short convolutions: shortconv.l_cache written
    // Gated DeltaNet layers (qwen35): the ssm.* keys with the value head size equal to the key
    // head size (d_state), full_attention_interval and rope.dimension_sections written.
    bool delta_net = false;
    bool delta_ba_grouped = false;  // qwen3next: one ssm_ba per key head; no rope.dimension_sections
    Hybrid hybrid = Hybrid::None;
    // With experts: a shared expert n_ff wide, its width written as expert_shared_feed_forward_length (Granite).
    bool shared_expert_ff_key = false;
    // Granite's residual and logit multipliers may be given (--residual-scale, --logit-scale).
    bool granite_multipliers = false;
    std::string default_layers;  // hybrids: the pattern without --layers, repeated to --n-layer
    // Metadata beyond the common set: (key without the "<arch>." prefix, value).
    std::vector<std::pair<std::string, gguf::Value>> extra_metadata;

    bool has_presence(Presence p) const;
    bool has_dim(Dim d) const;  // some tensor of the family has a dimension of this size
};

const ArchTable* find_arch_table(const std::string& arch);
const std::vector<ArchTable>& arch_tables();

}  // namespace vkllm::random_model
