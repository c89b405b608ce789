#include "random_model/model_metadata.h"

#include <string>
#include <vector>

#include "random_model/config_validation.h"

namespace vkllm::random_model {

using gguf::TensorType;
using gguf::Value;

namespace {

void copy_tokenizer(gguf::Writer& w, const gguf::File& vocab) {
    for (const std::string& key : vocab.keys_in_order())
        if (key.rfind("tokenizer.", 0) == 0) w.set(key, *vocab.find(key));
}

}  // namespace

uint32_t file_type_of(TensorType type) {
    switch (type) {  // LLAMA_FTYPE_* (llama.h); K-quants as their _M mixes
        case TensorType::F32: return 0;
        case TensorType::F16: return 1;
        case TensorType::Q4_0: return 2;
        case TensorType::Q4_1: return 3;
        case TensorType::Q8_0: return 7;
        case TensorType::Q5_0: return 8;
        case TensorType::Q5_1: return 9;
        case TensorType::Q2_K: return 10;
        case TensorType::Q3_K: return 12;
        case TensorType::Q4_K: return 15;
        case TensorType::Q5_K: return 17;
        case TensorType::Q6_K: return 18;
        case TensorType::BF16: return 32;
        case TensorType::MXFP4: return 38;
        default: break;
    }
    auto traits = gguf::type_traits(type);
    throw ConfigError(std::string("no llama.cpp file type for tensor type ") + (traits ? traits->name : "?"));
}

void add_metadata(gguf::Writer& w, const ArchTable& arch, const RandomModelConfig& c, const Sizes& sizes,
                  const gguf::File& vocab) {
    const std::string a = arch.name + ".";
    w.set("general.architecture", Value::from_string(arch.name));
    w.set("general.name", Value::from_string(c.name));
    w.set("general.file_type", Value::from_u32(file_type_of(c.expert_type.value_or(c.type))));
    w.set("general.quantization_version", Value::from_u32(2));
    w.set(a + "vocab_size", Value::from_u32(uint32_t(sizes.vocab)));
    w.set(a + "context_length", Value::from_u32(uint32_t(c.n_ctx)));
    w.set(a + "embedding_length", Value::from_u32(uint32_t(c.n_embd)));
    w.set(a + "block_count", Value::from_u32(uint32_t(c.n_layer)));
    // Mamba-2's converter writes 0 for both ("unused, but seemingly required when loading").
    // The hybrids' converters write per layer: key/value heads on attention layers only (0 marks
    // the others), an FFN width where an FFN stands alone (nemotron_h) or once (granitehybrid).
    const bool pure_ssm = arch.ssm && arch.hybrid == Hybrid::None && !arch.ssm_beside_attention;
    std::vector<int32_t> kv_per_layer, ff_per_layer;
    for (char part : c.layers) {
        kv_per_layer.push_back(part == '*' ? c.n_head_kv : 0);
        ff_per_layer.push_back(part == '-' ? c.n_ff : 0);
    }
    w.set(a + "feed_forward_length", arch.hybrid == Hybrid::OnePartPerLayer ? Value::from_i32s(ff_per_layer)
                                     : Value::from_u32(pure_ssm ? 0u : uint32_t(c.n_ff)));
    w.set(a + "attention.head_count", Value::from_u32(pure_ssm ? 0u : uint32_t(c.n_head)));
    if (arch.hybrid != Hybrid::None && arch.hybrid != Hybrid::DeltaNetOrAttention)
        w.set(a + "attention.head_count_kv", Value::from_i32s(kv_per_layer));
    else if (arch.writes_head_count_kv)
        w.set(a + "attention.head_count_kv", Value::from_u32(uint32_t(c.n_head_kv)));
    w.set(a + (arch.norm == NormKind::RMSNorm ? "attention.layer_norm_rms_epsilon" : "attention.layer_norm_epsilon"),
          Value::from_f32(arch.norm_eps));
    if (arch.uses_rope) {
        w.set(a + "rope.freq_base", Value::from_f32(c.rope_freq_base));
        w.set(a + "rope.dimension_count", Value::from_u32(uint32_t(c.rope_dims)));
    }
    if (arch.shortconv) w.set(a + "shortconv.l_cache", Value::from_u32(uint32_t(c.conv_l_cache)));
    if (arch.ssm) {
        w.set(a + "ssm.conv_kernel", Value::from_u32(uint32_t(c.ssm_conv)));
        w.set(a + "ssm.inner_size", Value::from_u32(uint32_t(c.ssm_inner)));
        w.set(a + "ssm.state_size", Value::from_u32(uint32_t(c.ssm_state)));
        if (arch.mamba1) {  // dt's rank; no groups
            w.set(a + "ssm.time_step_rank", Value::from_u32(uint32_t(c.ssm_dt_rank)));
            if (c.ssm_dt_b_c_rms) w.set(a + "ssm.dt_b_c_rms", Value::from_bool(true));
        } else {
            w.set(a + "ssm.time_step_rank", Value::from_u32(uint32_t(c.ssm_inner / c.ssm_head_dim)));
            w.set(a + "ssm.group_count", Value::from_u32(uint32_t(c.ssm_groups)));
        }
    }
    if (arch.delta_net) {
        w.set(a + "full_attention_interval", Value::from_u32(uint32_t(full_attention_interval(c.layers))));
        // IMRoPE's sections over the rotated pairs (time, height, width, extra), as Qwen3.5's
        // 11, 11, 10, 0 over 32: text positions give every section the same angle.
        const int32_t pairs = c.rope_dims / 2, hw = pairs / 3;
        if (!arch.delta_ba_grouped) w.set(a + "rope.dimension_sections", Value::from_i32s({pairs - 2 * hw, hw, hw, 0}));
    }
    if (arch.mla) {
        // As the converter writes them: the cached key is [latent; rope key] (kv_lora + qk_rope),
        // the cached value the latent; the *_mla lengths are the per-head sizes after
        // decompression (qk_nope + qk_rope, v_head_dim). Their presence switches llama.cpp to MLA.
        w.set(a + "attention.q_lora_rank", Value::from_u32(uint32_t(c.q_lora_rank)));
        w.set(a + "attention.kv_lora_rank", Value::from_u32(uint32_t(c.kv_lora_rank)));
        w.set(a + "attention.key_length", Value::from_u32(uint32_t(c.kv_lora_rank + c.rope_dims)));
        w.set(a + "attention.value_length", Value::from_u32(uint32_t(c.kv_lora_rank)));
        w.set(a + "attention.key_length_mla", Value::from_u32(uint32_t(c.head_dim)));
        w.set(a + "attention.value_length_mla", Value::from_u32(uint32_t(c.v_head_dim)));
    } else if (arch.always_write_head_dims || c.head_dim * c.n_head != c.n_embd) {
        w.set(a + "attention.key_length", Value::from_u32(uint32_t(c.head_dim)));
        w.set(a + "attention.value_length", Value::from_u32(uint32_t(c.head_dim)));
    }
    const RopeScalingConfig& r = c.rope_scaling;
    if (r.kind == RopeScalingConfig::Kind::Linear || r.kind == RopeScalingConfig::Kind::Yarn) {
        w.set(a + "rope.scaling.type", Value::from_string(r.kind == RopeScalingConfig::Kind::Linear ? "linear" : "yarn"));
        w.set(a + "rope.scaling.factor", Value::from_f32(r.factor));
        if (r.kind == RopeScalingConfig::Kind::Yarn)
            w.set(a + "rope.scaling.original_context_length", Value::from_u32(uint32_t(r.original_context)));
        if (c.yarn_log_multiplier != 0.0f)
            w.set(a + "rope.scaling.yarn_log_multiplier", Value::from_f32(c.yarn_log_multiplier));
    }
    if (r.kind == RopeScalingConfig::Kind::LongRope) {
        w.set(a + "rope.scaling.original_context_length", Value::from_u32(uint32_t(r.original_context)));
        w.set(a + "rope.scaling.attn_factor", Value::from_f32(longrope_attn_factor(c.n_ctx, r.original_context)));
    }
    if (c.n_expert > 0) {
        w.set(a + "expert_count", Value::from_u32(uint32_t(c.n_expert)));
        w.set(a + "expert_used_count", Value::from_u32(uint32_t(c.n_expert_used)));
        if (arch.writes_expert_ff_length) w.set(a + "expert_feed_forward_length", Value::from_u32(uint32_t(c.n_ff_exp)));
        if (c.moe_layer_step > 0 && arch.writes_moe_layer_step)
            w.set(a + "interleave_moe_layer_step", Value::from_u32(uint32_t(c.moe_layer_step)));
        if (arch.shared_expert_ff_key) w.set(a + "expert_shared_feed_forward_length", Value::from_u32(uint32_t(c.n_ff)));
    }
    if (arch.mla) {
        w.set(a + "leading_dense_block_count", Value::from_u32(uint32_t(c.leading_dense)));
        w.set(a + "expert_shared_count", Value::from_u32(uint32_t(c.n_expert_shared)));
        w.set(a + "expert_weights_scale", Value::from_f32(c.expert_weights_scale));
        if (c.expert_weights_norm == 1) w.set(a + "expert_weights_norm", Value::from_bool(true));
        // LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX 1, _SIGMOID 2
        w.set(a + "expert_gating_func", Value::from_u32(c.expert_gating == "sigmoid" ? 2 : 1));
        if (c.n_expert_groups > 0) {
            w.set(a + "expert_group_count", Value::from_u32(uint32_t(c.n_expert_groups)));
            w.set(a + "expert_group_used_count", Value::from_u32(uint32_t(c.n_group_used)));
        }
    }
    if (c.sliding_window > 0) w.set(a + "attention.sliding_window", Value::from_u32(uint32_t(c.sliding_window)));
    if (c.attn_softcap > 0.0f) w.set(a + "attn_logit_softcapping", Value::from_f32(c.attn_softcap));
    if (c.final_softcap > 0.0f) w.set(a + "final_logit_softcapping", Value::from_f32(c.final_softcap));
    if (c.residual_scale > 0.0f) w.set(a + "residual_scale", Value::from_f32(c.residual_scale));
    if (c.logit_scale > 0.0f) w.set(a + "logit_scale", Value::from_f32(c.logit_scale));
    for (const auto& [key, value] : arch.extra_metadata) w.set(a + key, value);
    copy_tokenizer(w, vocab);
    // llama.cpp's BERT loader needs the token type count (the rows of token_types).
    if (arch.has_dim(Dim::TokenTypes) && !vocab.has("tokenizer.ggml.token_type_count"))
        w.set("tokenizer.ggml.token_type_count", Value::from_u32(uint32_t(sizes.token_types)));
}

}  // namespace vkllm::random_model
