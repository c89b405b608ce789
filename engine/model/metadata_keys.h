// Every GGUF metadata key the model layer reads, named once (llama.cpp's key names,
// src/llama-arch.cpp LLM_KV_NAMES). The spec reader (spec.cpp) and the family table
// (families.cpp) refer to these constants; no key text is written anywhere else in engine/model
// (tests/model/test_family_table.cpp checks it). The tokenizer reads its own `tokenizer.*` keys
// (engine/tokenizer).
#pragma once

#include <string>
#include <string_view>

namespace vkllm::model::keys {

// A key stored under the architecture's prefix: `<arch>.<suffix>` (`llama.block_count`).
struct ArchKey {
    std::string_view suffix;

    std::string text() const { return std::string(suffix); }                              // "block_count"
    std::string in(const std::string& arch) const { return arch + "." + text(); }         // "llama.block_count"
};

// Keys with no architecture prefix.
inline constexpr std::string_view kArchitecture = "general.architecture";
inline constexpr std::string_view kName = "general.name";
inline constexpr std::string_view kTokenizerModel = "tokenizer.ggml.model";
inline constexpr std::string_view kTokenizerTokens = "tokenizer.ggml.tokens";
// The default chat template; named ones are `tokenizer.chat_template.<name>`.
inline constexpr std::string_view kChatTemplate = "tokenizer.chat_template";

// Shape.
inline constexpr ArchKey kBlockCount{"block_count"};
inline constexpr ArchKey kEmbeddingLength{"embedding_length"};
inline constexpr ArchKey kContextLength{"context_length"};
inline constexpr ArchKey kFeedForwardLength{"feed_forward_length"};  // once, or one value per layer

// Attention.
inline constexpr ArchKey kHeadCount{"attention.head_count"};         // once, or per layer
inline constexpr ArchKey kHeadCountKv{"attention.head_count_kv"};    // once, or per layer
inline constexpr ArchKey kKeyLength{"attention.key_length"};         // head size of queries and keys
inline constexpr ArchKey kValueLength{"attention.value_length"};
inline constexpr ArchKey kLayerNormRmsEps{"attention.layer_norm_rms_epsilon"};
inline constexpr ArchKey kLayerNormEps{"attention.layer_norm_epsilon"};
inline constexpr ArchKey kSlidingWindow{"attention.sliding_window"};
inline constexpr ArchKey kSlidingWindowPattern{"attention.sliding_window_pattern"};  // array or period
inline constexpr ArchKey kCausal{"attention.causal"};
inline constexpr ArchKey kAttnSoftcap{"attn_logit_softcapping"};
inline constexpr ArchKey kFinalSoftcap{"final_logit_softcapping"};
inline constexpr ArchKey kMaxAlibiBias{"attention.max_alibi_bias"};  // ALiBi's b: slopes 2^(-b h / n)

// RoPE.
inline constexpr ArchKey kRopeDimensionCount{"rope.dimension_count"};
inline constexpr ArchKey kRopeFreqBase{"rope.freq_base"};
inline constexpr ArchKey kRopeFreqBaseSwa{"rope.freq_base_swa"};  // the sliding-window layers' base
inline constexpr ArchKey kRopeScalingType{"rope.scaling.type"};
inline constexpr ArchKey kRopeScalingFactor{"rope.scaling.factor"};
inline constexpr ArchKey kRopeScalingOrigCtx{"rope.scaling.original_context_length"};
inline constexpr ArchKey kRopeScalingAttnFactor{"rope.scaling.attn_factor"};
inline constexpr ArchKey kRopeYarnBetaFast{"rope.scaling.yarn_beta_fast"};
inline constexpr ArchKey kRopeYarnBetaSlow{"rope.scaling.yarn_beta_slow"};
inline constexpr ArchKey kRopeYarnLogMultiplier{"rope.scaling.yarn_log_multiplier"};

// Mixture of experts.
inline constexpr ArchKey kExpertCount{"expert_count"};
inline constexpr ArchKey kExpertUsedCount{"expert_used_count"};
inline constexpr ArchKey kExpertFeedForwardLength{"expert_feed_forward_length"};
inline constexpr ArchKey kExpertWeightsScale{"expert_weights_scale"};
inline constexpr ArchKey kExpertWeightsNorm{"expert_weights_norm"};  // bool
inline constexpr ArchKey kExpertGatingFunc{"expert_gating_func"};    // 1 softmax, 2 sigmoid
inline constexpr ArchKey kExpertSharedCount{"expert_shared_count"};
inline constexpr ArchKey kExpertGroupCount{"expert_group_count"};
inline constexpr ArchKey kExpertGroupUsedCount{"expert_group_used_count"};
inline constexpr ArchKey kLeadingDenseBlockCount{"leading_dense_block_count"};
inline constexpr ArchKey kInterleaveMoeLayerStep{"interleave_moe_layer_step"};

// Multi-head latent attention.
inline constexpr ArchKey kQLoraRank{"attention.q_lora_rank"};
inline constexpr ArchKey kKvLoraRank{"attention.kv_lora_rank"};
inline constexpr ArchKey kKeyLengthMla{"attention.key_length_mla"};
inline constexpr ArchKey kValueLengthMla{"attention.value_length_mla"};

// State-space layers (Mamba-2).
inline constexpr ArchKey kSsmConvKernel{"ssm.conv_kernel"};
inline constexpr ArchKey kSsmInnerSize{"ssm.inner_size"};
inline constexpr ArchKey kSsmStateSize{"ssm.state_size"};
inline constexpr ArchKey kSsmTimeStepRank{"ssm.time_step_rank"};  // Mamba-2: the SSM's heads
inline constexpr ArchKey kSsmGroupCount{"ssm.group_count"};
inline constexpr ArchKey kSsmDtBCRms{"ssm.dt_b_c_rms"};  // bool: Falcon-Mamba's RMS norms of dt, B and C
inline constexpr ArchKey kShortconvLCache{"shortconv.l_cache"};  // LFM2: the short convolution's taps
// Qwen3-Next / Qwen3.5: which layers are recurrent (Gated DeltaNet), as a bool per layer or as the
// period of the full-attention layers.
inline constexpr ArchKey kRecurrentLayers{"attention.recurrent_layers"};
inline constexpr ArchKey kFullAttentionInterval{"full_attention_interval"};

// RWKV-7: the wkv heads' size and the time mix's four low-rank projections.
inline constexpr ArchKey kWkvHeadSize{"wkv.head_size"};
inline constexpr ArchKey kDecayLoraRank{"attention.decay_lora_rank"};
inline constexpr ArchKey kIclrLoraRank{"attention.iclr_lora_rank"};
inline constexpr ArchKey kValueResidualMixLoraRank{"attention.value_residual_mix_lora_rank"};
inline constexpr ArchKey kGateLoraRank{"attention.gate_lora_rank"};

// Granite's multipliers and RoPE switch.
inline constexpr ArchKey kEmbeddingScale{"embedding_scale"};
inline constexpr ArchKey kResidualScale{"residual_scale"};
inline constexpr ArchKey kLogitScale{"logit_scale"};
inline constexpr ArchKey kAttentionScale{"attention.scale"};
inline constexpr ArchKey kRopeScalingFinetuned{"rope.scaling.finetuned"};  // bool: RoPE on (default) or off
inline constexpr ArchKey kExpertSharedFeedForwardLength{"expert_shared_feed_forward_length"};

// Encoders.
inline constexpr ArchKey kPoolingType{"pooling_type"};  // 0 none, 1 mean, 2 cls, 3 last

// Every key above, for checks and listings.
inline constexpr std::string_view kGeneralKeys[] = {kArchitecture, kName, kTokenizerModel, kTokenizerTokens,
                                                    kChatTemplate};
inline constexpr ArchKey kArchKeys[] = {
    kBlockCount, kEmbeddingLength, kContextLength, kFeedForwardLength,
    kHeadCount, kHeadCountKv, kKeyLength, kValueLength, kLayerNormRmsEps, kLayerNormEps, kSlidingWindow,
    kSlidingWindowPattern, kCausal, kAttnSoftcap, kFinalSoftcap, kMaxAlibiBias,
    kRopeDimensionCount, kRopeFreqBase, kRopeFreqBaseSwa, kRopeScalingType, kRopeScalingFactor, kRopeScalingOrigCtx,
    kRopeScalingAttnFactor, kRopeYarnBetaFast, kRopeYarnBetaSlow, kRopeYarnLogMultiplier,
    kExpertCount, kExpertUsedCount, kExpertFeedForwardLength, kExpertWeightsScale, kExpertWeightsNorm,
    kExpertGatingFunc, kExpertSharedCount, kExpertGroupCount, kExpertGroupUsedCount, kLeadingDenseBlockCount,
    kInterleaveMoeLayerStep,
    kQLoraRank, kKvLoraRank, kKeyLengthMla, kValueLengthMla,
    kSsmConvKernel, kSsmInnerSize, kSsmStateSize, kSsmTimeStepRank, kSsmGroupCount, kSsmDtBCRms, kShortconvLCache,
    kRecurrentLayers, kFullAttentionInterval,
    kWkvHeadSize, kDecayLoraRank, kIclrLoraRank, kValueResidualMixLoraRank, kGateLoraRank,
    kEmbeddingScale, kResidualScale, kLogitScale, kAttentionScale, kRopeScalingFinetuned,
    kExpertSharedFeedForwardLength,
    kPoolingType,
};

}  // namespace vkllm::model::keys
