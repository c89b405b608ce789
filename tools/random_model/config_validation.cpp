#include "random_model/config_validation.h"

#include <algorithm>
#include <cmath>

#include "gguf/quant.h"

namespace vkllm::random_model {

using gguf::TensorType;

void require(bool ok, const std::string& message) {
    if (!ok) throw ConfigError(message);
}

int full_attention_interval(const std::string& layers) {
    const size_t first = layers.find('*');
    require(first != std::string::npos,
            "--layers '" + layers + "' has no attention layer (*): llama.cpp needs one for its KV cache");
    return int(first) + 1;
}

bool is_moe_layer(const RandomModelConfig& c, int layer) {
    if (c.n_expert == 0) return false;
    if (layer >= 0 && layer < c.leading_dense) return false;  // deepseek2's leading dense layers
    return c.moe_layer_step == 0 || layer < 0 || (layer + 1) % c.moe_layer_step == 0;
}

namespace {

// Fills in and checks the mixture-of-experts sizes.
void validate_experts(RandomModelConfig& c, const ArchTable& arch) {
    const int kMaxExperts = 512;  // LLAMA_MAX_EXPERTS
    require(c.n_expert >= 0 && c.n_expert_used >= 0 && c.n_ff_exp >= 0, "expert sizes must be positive");
    if (arch.moe == MoeSupport::None) {
        require(c.n_expert == 0 && c.n_expert_used == 0 && c.n_ff_exp == 0,
                arch.name + " has no mixture of experts; drop --n-expert, --n-expert-used and --n-ff-exp");
        return;
    }
    if (c.n_expert == 0) c.n_expert = arch.default_n_expert;
    if (c.n_expert == 0) {  // a dense model of a family with optional experts
        require(c.n_expert_used == 0 && c.n_ff_exp == 0, "--n-expert-used and --n-ff-exp need --n-expert");
        return;
    }
    require(c.n_expert <= kMaxExperts, "--n-expert must be at most " + std::to_string(kMaxExperts));
    if (c.n_expert_used == 0) c.n_expert_used = std::min(arch.default_n_expert_used, c.n_expert);
    require(c.n_expert_used >= 1 && c.n_expert_used <= c.n_expert,
            "--n-expert-used " + std::to_string(c.n_expert_used) + " must be between 1 and --n-expert " +
                std::to_string(c.n_expert));
    if (arch.writes_expert_ff_length) {
        if (c.n_ff_exp == 0) c.n_ff_exp = c.n_ff;
        require(c.n_ff_exp <= (1 << 20), "--n-ff-exp is too large");
    } else {
        require(c.n_ff_exp == 0 || c.n_ff_exp == c.n_ff,
                arch.name + "'s experts are feed_forward_length wide in llama.cpp; use --n-ff, not --n-ff-exp");
        c.n_ff_exp = c.n_ff;
    }
}

// Fills in and checks the deepseek2 options (multi-head latent attention, DeepSeek MoE); other
// families must leave them unset.
void validate_deepseek(RandomModelConfig& c, const ArchTable& arch) {
    if (!arch.mla) {
        require(c.q_lora_rank == -1 && c.kv_lora_rank == 0 && c.v_head_dim == 0 && c.leading_dense == -1 &&
                    c.n_expert_shared == 0 && c.n_expert_groups == 0 && c.n_group_used == 0 && c.expert_gating.empty() &&
                    c.expert_weights_norm == -1 && c.expert_weights_scale == 0.0f && c.yarn_log_multiplier == 0.0f,
                "the latent-attention and DeepSeek MoE options (--q-lora-rank, --kv-lora-rank, --v-head-dim, "
                "--leading-dense, --n-expert-shared, --expert-groups, --expert-gating, --expert-weights-norm, "
                "--expert-weights-scale, --yarn-log-multiplier) are for deepseek2 only, not " + arch.name);
        return;
    }
    // The converter writes head_count_kv 1: llama.cpp runs MLA as multi-query attention over the latent.
    require(c.n_head_kv == 1, arch.name + ": multi-head latent attention has one kv head (head_count_kv 1); give --n-head-kv 1");
    if (c.rope_dims == 0) c.rope_dims = (c.head_dim / 2) & ~1;  // half the head, even
    require(c.rope_dims > 0 && c.rope_dims < c.head_dim && c.rope_dims % 2 == 0,
            arch.name + ": --rope-dims (qk_rope_head_dim) must be even and below --head-dim (qk_nope + qk_rope)");
    if (c.q_lora_rank == -1) c.q_lora_rank = 32;
    if (c.kv_lora_rank == 0) c.kv_lora_rank = 16;
    if (c.v_head_dim == 0) c.v_head_dim = c.head_dim - c.rope_dims;
    if (c.leading_dense == -1) c.leading_dense = 1;
    if (c.n_expert_shared == 0) c.n_expert_shared = 1;
    if (c.expert_gating.empty()) c.expert_gating = "sigmoid";
    if (c.expert_weights_norm == -1) c.expert_weights_norm = 1;
    if (c.expert_weights_scale == 0.0f) c.expert_weights_scale = 2.5f;
    require(c.q_lora_rank >= 0 && c.q_lora_rank <= (1 << 20), "--q-lora-rank must be between 0 and 2^20");
    require(c.kv_lora_rank > 0 && c.kv_lora_rank <= (1 << 20), "--kv-lora-rank must be positive");
    require(c.v_head_dim > 0 && c.v_head_dim <= 4096, "--v-head-dim must be between 1 and 4096");
    require(c.leading_dense >= 0 && c.leading_dense <= c.n_layer, "--leading-dense must be between 0 and --n-layer");
    require(c.n_expert_shared > 0 && c.n_expert_shared <= 64, "--n-expert-shared must be between 1 and 64");
    require(c.expert_gating == "softmax" || c.expert_gating == "sigmoid",
            "--expert-gating '" + c.expert_gating + "': softmax or sigmoid");
    require(c.expert_weights_norm == 0 || c.expert_weights_norm == 1, "--expert-weights-norm must be 0 or 1");
    require(std::isfinite(c.expert_weights_scale) && c.expert_weights_scale > 0.0f, "--expert-weights-scale must be positive");
    if (c.n_expert_groups > 0) {
        // llama.cpp: groups divide the experts, each group scored by the sum of its two best experts.
        require(c.n_expert_groups > 1 && c.n_expert_groups < c.n_expert && c.n_expert % c.n_expert_groups == 0 &&
                    c.n_expert / c.n_expert_groups >= 2,
                "--expert-groups: the group count must divide --n-expert into groups of at least 2 experts");
        require(c.n_group_used > 0 && c.n_group_used < c.n_expert_groups,
                "--expert-groups G:U: U must be between 1 and G - 1");
        require(c.n_expert_used <= c.n_group_used * (c.n_expert / c.n_expert_groups),
                "--n-expert-used must be at most the experts of the groups used");
    }
    require(c.yarn_log_multiplier == 0.0f || c.rope_scaling.kind == RopeScalingConfig::Kind::Yarn,
            "--yarn-log-multiplier needs --rope-scaling yarn:...");
}

// Fills in and checks the Mamba-2 sizes; other families must leave them unset.
void validate_ssm(RandomModelConfig& c, const ArchTable& arch) {
    if (!arch.ssm) {
        require(c.ssm_conv == 0 && c.ssm_inner == 0 && c.ssm_state == 0 && c.ssm_head_dim == 0 && c.ssm_groups == 0 &&
                    c.ssm_dt_rank == 0 && !c.ssm_dt_b_c_rms,
                "the state-space options (--ssm-conv, --ssm-inner, --ssm-state, --ssm-head-dim, --ssm-groups, "
                "--ssm-dt-rank, --ssm-dt-b-c-rms) are for the state-space families only, not " + arch.name);
        return;
    }
    if (arch.delta_net) {  // one head size for keys and values: --ssm-state
        if (c.ssm_head_dim == 0) c.ssm_head_dim = c.ssm_state > 0 ? c.ssm_state : 16;
        if (c.ssm_state == 0) c.ssm_state = c.ssm_head_dim;
        require(c.ssm_head_dim == c.ssm_state, arch.name + ": Gated DeltaNet's value heads (--ssm-head-dim " +
                                                   std::to_string(c.ssm_head_dim) + ") are as wide as its key heads " +
                                                   "(--ssm-state " + std::to_string(c.ssm_state) + ")");
        require(c.ssm_state <= 256, "--ssm-state must be at most 256 for Gated DeltaNet");
    }
    if (c.ssm_conv == 0) c.ssm_conv = 4;
    if (c.ssm_inner == 0) c.ssm_inner = 2 * c.n_embd;
    if (c.ssm_state == 0) c.ssm_state = 16;
    if (c.ssm_head_dim == 0) c.ssm_head_dim = 16;
    if (c.ssm_groups == 0) c.ssm_groups = 1;
    if (arch.mamba1) {
        require(c.ssm_groups == 1, arch.name + " has one group of B and C; drop --ssm-groups");
        require(c.ssm_dt_rank >= 0 && c.ssm_dt_rank <= (1 << 16), "--ssm-dt-rank must be positive");
        if (c.ssm_dt_rank == 0) c.ssm_dt_rank = (c.n_embd + 15) / 16;  // the converter's ceil(n_embd / 16)
        require(c.ssm_inner == 2 * c.n_embd, arch.name + ": llama.cpp supports d_inner = 2 n_embd only; drop --ssm-inner");
        require(!c.ssm_dt_b_c_rms || arch.hybrid == Hybrid::None,
                "--ssm-dt-b-c-rms is for mamba (Falcon-Mamba) only, not " + arch.name);
    } else {
        require(c.ssm_dt_rank == 0 && !c.ssm_dt_b_c_rms,
                "--ssm-dt-rank and --ssm-dt-b-c-rms are for mamba only, not " + arch.name);
    }
    require(c.ssm_conv >= 2 && c.ssm_conv <= 16, "--ssm-conv must be between 2 and 16");
    require(c.ssm_inner > 0 && c.ssm_inner <= (1 << 20), "--ssm-inner must be positive");
    require(c.ssm_state > 0 && c.ssm_state <= 1024, "--ssm-state must be between 1 and 1024");
    require(c.ssm_head_dim > 0 && c.ssm_inner % c.ssm_head_dim == 0,
            "--ssm-head-dim " + std::to_string(c.ssm_head_dim) + " must divide --ssm-inner " +
                std::to_string(c.ssm_inner));
    const int n_head = c.ssm_inner / c.ssm_head_dim;
    require(c.ssm_groups > 0 && n_head % c.ssm_groups == 0,
            "--ssm-groups " + std::to_string(c.ssm_groups) + " must divide the SSM heads (" + std::to_string(n_head) +
                " = --ssm-inner / --ssm-head-dim)");
}

// Fills in and checks a hybrid family's layer pattern; other families must leave it unset.
void validate_layers(RandomModelConfig& c, const ArchTable& arch) {
    if (arch.hybrid == Hybrid::None) {
        require(c.layers.empty(), "--layers is for the hybrid families (nemotron_h, granitehybrid, lfm2, qwen35, qwen35moe, qwen3next), not " + arch.name);
        return;
    }
    if (arch.hybrid == Hybrid::DeltaNetOrAttention) {
        if (c.layers.empty())
            for (int l = 0; l < c.n_layer; ++l) c.layers += arch.default_layers[size_t(l) % arch.default_layers.size()];
        require(int(c.layers.size()) == c.n_layer, "--layers '" + c.layers + "' has " + std::to_string(c.layers.size()) +
                                                       " characters for --n-layer " + std::to_string(c.n_layer));
        // llama.cpp reads full_attention_interval N: layer il is attention when (il + 1) % N == 0.
        const int interval = full_attention_interval(c.layers);
        for (int l = 0; l < c.n_layer; ++l)
            require(c.layers[size_t(l)] == ((l + 1) % interval == 0 ? '*' : 'D'),
                    "--layers '" + c.layers + "': " + arch.name + " layers are D (Gated DeltaNet) with every " +
                        "N-th * (attention), N the position of the first *");
        return;
    }
    if (arch.hybrid == Hybrid::ConvOrAttention) {
        if (c.layers.empty())
            for (int l = 0; l < c.n_layer; ++l) c.layers += arch.default_layers[size_t(l) % arch.default_layers.size()];
        require(int(c.layers.size()) == c.n_layer, "--layers '" + c.layers + "' has " + std::to_string(c.layers.size()) +
                                                       " characters for --n-layer " + std::to_string(c.n_layer));
        require(c.layers.find_first_not_of("C*") == std::string::npos,
                "--layers '" + c.layers + "': " + arch.name + " layers are C (a short convolution) or * (attention)");
        return;
    }
    if (c.layers.empty())
        for (int l = 0; l < c.n_layer; ++l) c.layers += arch.default_layers[size_t(l) % arch.default_layers.size()];
    require(int(c.layers.size()) == c.n_layer, "--layers '" + c.layers + "' has " + std::to_string(c.layers.size()) +
                                                   " characters for --n-layer " + std::to_string(c.n_layer));
    const std::string allowed = arch.hybrid == Hybrid::OnePartPerLayer ? "M*-" : "M*";
    require(c.layers.find_first_not_of(allowed) == std::string::npos,
            "--layers '" + c.layers + "': " + arch.name + " layers are " +
                (arch.hybrid == Hybrid::OnePartPerLayer ? "M (Mamba-2), * (attention) or - (an FFN alone)"
                                                        : "M (Mamba-2) or * (attention)"));
}

}  // namespace

RandomModelConfig validated(RandomModelConfig c, const ArchTable& arch) {
    const int kMaxSize = 1 << 20;
    auto in_range = [&](const char* option, int v, int max) {
        require(v > 0 && v <= max, std::string(option) + " must be between 1 and " + std::to_string(max) + ", not " +
                                       std::to_string(v));
    };
    in_range("--n-embd", c.n_embd, kMaxSize);
    in_range("--n-layer", c.n_layer, 4096);
    in_range("--n-head", c.n_head, 4096);
    if (arch.ssm && arch.hybrid == Hybrid::None && !arch.ssm_beside_attention)
        c.n_head_kv = c.n_head;  // no attention: the head options are unused
    in_range("--n-head-kv", c.n_head_kv, c.n_head);
    in_range("--n-ff", c.n_ff, kMaxSize);
    in_range("--n-ctx", c.n_ctx, 1 << 24);
    require(c.n_head % c.n_head_kv == 0, "--n-head " + std::to_string(c.n_head) + " is not a multiple of --n-head-kv " +
                                             std::to_string(c.n_head_kv));
    if (c.head_dim == 0) {
        require(c.n_embd % c.n_head == 0, "--n-embd " + std::to_string(c.n_embd) + " is not a multiple of --n-head " +
                                              std::to_string(c.n_head) + "; give --head-dim");
        c.head_dim = c.n_embd / c.n_head;
    }
    in_range("--head-dim", c.head_dim, 4096);
    require(!arch.uses_rope || c.head_dim % 2 == 0,
            "--head-dim " + std::to_string(c.head_dim) + " must be even (RoPE rotates pairs)");
    require(arch.head_dim_free || c.head_dim * c.n_head == c.n_embd,
            arch.name + " needs head_dim * n_head == n_embd (llama.cpp sizes its projections so); drop --head-dim");
    require(arch.writes_head_count_kv || c.n_head_kv == c.n_head,
            arch.name + " has multi-head attention only (its files carry no head_count_kv); set --n-head-kv to --n-head");
    require(!arch.mha_only || c.n_head_kv == c.n_head,
            arch.name + " has multi-head attention only in llama.cpp (its k norm is sized n_embd); set --n-head-kv to --n-head");
    if (arch.mla) {
        // checked with the other latent-attention sizes (validate_deepseek)
    } else if (!arch.uses_rope) {
        require(c.rope_dims == 0, arch.name + " has no RoPE; drop --rope-dims");
    } else if (c.rope_dims == 0) {
        c.rope_dims = c.head_dim;
    } else {
        in_range("--rope-dims", c.rope_dims, c.head_dim);
        require(c.rope_dims % 2 == 0, "--rope-dims " + std::to_string(c.rope_dims) + " must be even");
        require(arch.partial_rope || c.rope_dims == c.head_dim,
                arch.name + " rotates whole heads in llama.cpp; --rope-dims must equal the head dim " +
                    std::to_string(c.head_dim));
    }

    for (TensorType t : {c.type, c.expert_type.value_or(c.type)})
        require(gguf::can_quantize(t) && gguf::type_traits(t).has_value(),
                std::string("--type ") + (gguf::type_traits(t) ? gguf::type_traits(t)->name : "?") +
                    " cannot be written (no quantizer for it)");
    if (arch.always_tied) c.tied = true;
    require(!(arch.never_tied && c.tied), arch.name + " always has an output.weight in llama.cpp; drop --tied");
    if (c.name.empty()) c.name = arch.default_model_name.empty() ? "random-" + arch.name : arch.default_model_name;
    if (c.rope_freq_base == 0.0f) c.rope_freq_base = arch.rope_freq_base;
    require(c.rope_freq_base > 1.0f, "--rope-freq-base must be above 1");

    const RopeScalingConfig& r = c.rope_scaling;
    require(arch.uses_rope || r.kind == RopeScalingConfig::Kind::None, arch.name + " has no RoPE; drop --rope-scaling");
    if (r.kind != RopeScalingConfig::Kind::None) require(r.factor > 0.0f, "--rope-scaling factor must be positive");
    if (r.kind == RopeScalingConfig::Kind::Yarn || r.kind == RopeScalingConfig::Kind::Llama3 ||
        r.kind == RopeScalingConfig::Kind::LongRope)
        require(r.original_context > 0, "--rope-scaling: the original context length must be positive");
    if (r.kind == RopeScalingConfig::Kind::LongRope)
        require(arch.has_presence(Presence::LongRope),
                "longrope rope scaling (rope_factors_long/short tensors) is only written for phi3, not " + arch.name);
    if (r.kind == RopeScalingConfig::Kind::Llama3) {
        require(arch.has_presence(Presence::Llama3Rope), "llama3 rope scaling (a rope_freqs tensor) is not read by " +
                                                             arch.name + " in llama.cpp");
        require(r.low_freq_factor > 0.0f && r.high_freq_factor > r.low_freq_factor,
                "--rope-scaling llama3: needs 0 < LOW < HIGH");
    }

    require(c.sliding_window >= 0, "--sliding-window must be positive");
    if (arch.optional_sliding_window) {
        // written only when given (llama4's on/off switch for chunked attention)
    } else if (arch.default_sliding_window == 0)
        require(c.sliding_window == 0, arch.name + " has no sliding-window attention; drop --sliding-window");
    else if (c.sliding_window == 0)
        c.sliding_window = arch.default_sliding_window;

    require(c.attn_softcap >= 0.0f && c.final_softcap >= 0.0f, "soft-caps must be positive");
    require(c.attn_softcap == 0.0f || arch.default_attn_softcap != 0.0f,
            arch.name + " has no attention-logit soft-capping in llama.cpp; drop --attn-softcap");
    require(c.final_softcap == 0.0f || arch.default_final_softcap != 0.0f,
            arch.name + " has no final-logit soft-capping in llama.cpp; drop --final-softcap");
    require(c.residual_scale >= 0.0f && c.logit_scale >= 0.0f, "--residual-scale and --logit-scale must be positive");
    require((c.residual_scale == 0.0f && c.logit_scale == 0.0f) || arch.granite_multipliers,
            arch.name + " has no residual or logit multipliers in llama.cpp; drop --residual-scale and --logit-scale");
    require(!c.two_norms || arch.has_presence(Presence::TwoNorms),
            arch.name + " has no second layer norm in llama.cpp; drop --two-norms");
    validate_experts(c, arch);
    validate_deepseek(c, arch);
    validate_ssm(c, arch);
    validate_layers(c, arch);
    require(c.conv_l_cache == 0 || arch.shortconv, "--conv-l-cache is for lfm2 only, not " + arch.name);
    if (arch.shortconv) {
        if (c.conv_l_cache == 0) c.conv_l_cache = 3;
        require(c.conv_l_cache >= 2 && c.conv_l_cache <= 16, "--conv-l-cache must be between 2 and 16");
    }
    require(c.moe_layer_step >= 0, "--moe-layer-step must be positive");
    if (arch.default_moe_layer_step == 0)
        require(c.moe_layer_step == 0, arch.name + " does not interleave dense and MoE layers; drop --moe-layer-step");
    else if (c.moe_layer_step == 0)
        c.moe_layer_step = arch.default_moe_layer_step;
    require(!c.expert_type || c.n_expert > 0, "--expert-type needs experts (--n-expert)");
    if (c.attn_softcap == 0.0f) c.attn_softcap = std::max(0.0f, arch.default_attn_softcap);
    if (c.final_softcap == 0.0f) c.final_softcap = std::max(0.0f, arch.default_final_softcap);
    return c;
}

}  // namespace vkllm::random_model
