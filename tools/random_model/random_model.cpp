#include "random_model/random_model.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <numbers>
#include <sstream>
#include <thread>

#include "gguf/quant.h"
#include "random_model/arch_tables.h"
#include "random_model/random_weights.h"
#include "random_model/rwkv7_model.h"

namespace vkllm::random_model {

using gguf::TensorType;
using gguf::Value;

namespace {

// Sizes every symbolic Dim resolves to.
struct Sizes {
    uint64_t embd, vocab, ff, q_proj, kv_proj, head_dim, head, rope_half, ctx, expert, ff_exp;
    uint64_t q_lora, kv_lora, rope, v_head, ff_shared;  // deepseek2 (multi-head latent attention)
    uint64_t token_types;                               // bert
    uint64_t ssm_inner, ssm_head, ssm_conv, ssm_state, ssm_groups;  // mamba2
    uint64_t ssm_dt_rank;                                            // mamba
    uint64_t conv_l_cache;                                           // lfm2

    uint64_t of(Dim d) const {
        switch (d) {
            case Dim::Embd: return embd;
            case Dim::Vocab: return vocab;
            case Dim::Ff: return ff;
            case Dim::QProj: return q_proj;
            case Dim::KvProj: return kv_proj;
            case Dim::HeadDim: return head_dim;
            case Dim::Head: return head;
            case Dim::RopeHalf: return rope_half;
            case Dim::Ctx: return ctx;
            case Dim::QkvProj: return q_proj + 2 * kv_proj;
            case Dim::FfPair: return 2 * ff;
            case Dim::Expert: return expert;
            case Dim::FfExp: return ff_exp;
            case Dim::QLora: return q_lora;
            case Dim::KvLora: return kv_lora;
            case Dim::KvLoraRope: return kv_lora + rope;
            case Dim::QkNope: return head_dim - rope;
            case Dim::VHead: return v_head;
            case Dim::VProj: return head * v_head;
            case Dim::FfShared: return ff_shared;
            case Dim::TokenTypes: return token_types;
            case Dim::One: return 1;
            case Dim::SsmInner: return ssm_inner;
            case Dim::SsmHead: return ssm_head;
            case Dim::SsmConv: return ssm_conv;
            case Dim::SsmConvDim: return ssm_inner + 2 * ssm_groups * ssm_state;
            case Dim::SsmInProj: return 2 * ssm_inner + 2 * ssm_groups * ssm_state + ssm_head;
            case Dim::SsmGroupWidth: return ssm_inner / ssm_groups;
            case Dim::SsmGroups: return ssm_groups;
            case Dim::SsmDtRank: return ssm_dt_rank;
            case Dim::SsmXProj: return ssm_dt_rank + 2 * ssm_state;
            case Dim::SsmInnerPair: return 2 * ssm_inner;
            case Dim::SsmState: return ssm_state;
            case Dim::ConvLCache: return conv_l_cache;
            case Dim::EmbdTriple: return 3 * embd;
            case Dim::QProjGated: return 2 * q_proj;
            case Dim::SsmHeadPair: return 2 * ssm_head;
        }
        return 0;
    }
};

float parse_float(const std::string& text, const std::string& what) {
    try {
        size_t used = 0;
        float v = std::stof(text, &used);
        if (used == text.size() && std::isfinite(v)) return v;
    } catch (const std::exception&) {
    }
    throw ConfigError("--rope-scaling: " + what + " '" + text + "' is not a number");
}

int parse_int(const std::string& text, const std::string& what) {
    try {
        size_t used = 0;
        int v = std::stoi(text, &used);
        if (used == text.size()) return v;
    } catch (const std::exception&) {
    }
    throw ConfigError("--rope-scaling: " + what + " '" + text + "' is not an integer");
}

std::string replace_layer(std::string pattern, int layer) {
    const size_t at = pattern.find("{L}");
    if (at != std::string::npos) pattern.replace(at, 3, std::to_string(layer));
    return pattern;
}

// Llama 3 RoPE scaling as a per-frequency divisor of theta (llama.cpp's rope_freqs tensor), as
// convert_hf_to_gguf.py computes it: high frequencies (wavelength < orig_ctx / high_freq_factor)
// keep theta, low ones (wavelength > orig_ctx / low_freq_factor) are divided by `factor`, and
// the band between interpolates smoothly.
std::vector<float> llama3_rope_freq_factors(const RopeScalingConfig& r, float freq_base, uint64_t rope_dims) {
    const double old_ctx = r.original_context;
    const double low_wavelen = old_ctx / r.low_freq_factor;
    const double high_wavelen = old_ctx / r.high_freq_factor;
    std::vector<float> factors;
    for (uint64_t i = 0; i < rope_dims; i += 2) {
        const double freq = 1.0 / std::pow(double(freq_base), double(i) / double(rope_dims));
        const double wavelen = 2.0 * std::numbers::pi / freq;
        if (wavelen < high_wavelen) {
            factors.push_back(1.0f);
        } else if (wavelen > low_wavelen) {
            factors.push_back(r.factor);
        } else {
            const double smooth = (old_ctx / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
            factors.push_back(float(1.0 / ((1.0 - smooth) / r.factor + smooth)));
        }
    }
    return factors;
}

// LongRoPE divisors (not random, so they look like a trained model's: 1 for the highest
// frequency, growing towards the lowest). Long: geometric from 1 to n_ctx / original context
// (at least 2). Short: linear from 1 to 1.1.
std::vector<float> longrope_factors(bool long_factors, int n_ctx, int original_context, uint64_t n) {
    const double top = std::max(2.0, double(n_ctx) / double(original_context));
    std::vector<float> factors;
    for (uint64_t i = 0; i < n; ++i) {
        const double t = n > 1 ? double(i) / double(n - 1) : 0.0;
        factors.push_back(float(long_factors ? std::pow(top, t) : 1.0 + 0.1 * t));
    }
    return factors;
}

void require(bool ok, const std::string& message) {
    if (!ok) throw ConfigError(message);
}

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

// The attention period of a Gated DeltaNet pattern: the first attention layer's position (1-based).
int full_attention_interval(const std::string& layers) {
    const size_t first = layers.find('*');
    require(first != std::string::npos,
            "--layers '" + layers + "' has no attention layer (*): llama.cpp needs one for its KV cache");
    return int(first) + 1;
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

// Checks the configuration against the family; returns it with defaults filled in.
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

std::vector<uint8_t> encode(TensorType type, const std::vector<float>& values) {
    if (type == TensorType::F32) {
        std::vector<uint8_t> bytes(values.size() * sizeof(float));
        std::memcpy(bytes.data(), values.data(), bytes.size());
        return bytes;
    }
    return gguf::quantize(type, values.data(), values.size());
}

std::vector<float> initial_values(const TensorRule& rule, const std::string& name, const std::vector<uint64_t>& dims,
                                  const RandomModelConfig& c, const Sizes& sizes) {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    Rng rng(c.seed, name);
    switch (rule.init) {
        case Init::Embedding: return normal_values(rng, n, 0.0, 1.0 / std::sqrt(double(sizes.embd)));
        case Init::Matrix: return normal_values(rng, n, 0.0, rule.scale / std::sqrt(double(dims[0])));
        case Init::Norm: return normal_values(rng, n, 1.0, 0.1);
        case Init::Bias: return normal_values(rng, n, 0.0, 0.1 * rule.scale);
        case Init::RopeFreqs: return llama3_rope_freq_factors(c.rope_scaling, c.rope_freq_base, uint64_t(c.rope_dims));
        case Init::LongRopeLong:
        case Init::LongRopeShort:
            return longrope_factors(rule.init == Init::LongRopeLong, c.n_ctx, c.rope_scaling.original_context, n);
        case Init::SsmA:
        case Init::SsmDtBias: {
            std::vector<float> v(n);
            for (float& x : v) {
                const double u = double(rng.next_u64() >> 11) * 0x1.0p-53;  // uniform [0, 1)
                if (rule.init == Init::SsmA) {
                    x = float(-(1.0 + 15.0 * u));
                } else {
                    const double dt = std::exp(std::log(1e-3) + u * (std::log(1e-1) - std::log(1e-3)));
                    x = float(dt + std::log(-std::expm1(-dt)));  // softplus^-1(dt)
                }
            }
            return v;
        }
    }
    return {};
}

// Whether layer `layer` (-1: a global tensor) has experts: with an interleave step S (llama4),
// only layers with (layer + 1) % S == 0.
bool is_moe_layer(const RandomModelConfig& c, int layer) {
    if (c.n_expert == 0) return false;
    if (layer >= 0 && layer < c.leading_dense) return false;  // deepseek2's leading dense layers
    return c.moe_layer_step == 0 || layer < 0 || (layer + 1) % c.moe_layer_step == 0;
}

bool present(Presence p, const RandomModelConfig& c, int layer) {
    switch (p) {
        case Presence::Always: return true;
        case Presence::Untied: return !c.tied;
        case Presence::Llama3Rope: return c.rope_scaling.kind == RopeScalingConfig::Kind::Llama3;
        case Presence::LongRope: return c.rope_scaling.kind == RopeScalingConfig::Kind::LongRope;
        case Presence::Dense: return !is_moe_layer(c, layer);
        case Presence::Moe: return is_moe_layer(c, layer);
        case Presence::MoeSelectionBias: return is_moe_layer(c, layer) && c.expert_gating == "sigmoid";
        case Presence::QLora: return c.q_lora_rank > 0;
        case Presence::NoQLora: return c.q_lora_rank <= 0;
        case Presence::SsmLayer: return layer >= 0 && c.layers[size_t(layer)] == 'M';
        case Presence::AttentionLayer: return layer >= 0 && c.layers[size_t(layer)] == '*';
        case Presence::FfnAloneLayer: return layer >= 0 && c.layers[size_t(layer)] == '-';
        case Presence::ConvLayer: return layer >= 0 && c.layers[size_t(layer)] == 'C';
        case Presence::DeltaNetLayer: return layer >= 0 && c.layers[size_t(layer)] == 'D';
        case Presence::TwoNorms: return c.two_norms;
    }
    return false;
}

// One tensor's name, storage type, dimensions and bytes, made independently of every other.
struct MadeTensor {
    std::string name;
    TensorType type = TensorType::F32;
    std::vector<uint64_t> dims;
    std::vector<uint8_t> bytes;
};

MadeTensor make_tensor(const TensorRule& rule, const std::string& name, const RandomModelConfig& c, const Sizes& sizes,
                       const PlantContext* plant) {
    std::vector<uint64_t> dims;
    for (Dim d : rule.dims) dims.push_back(sizes.of(d));
    // 1-D tensors (norms, biases, rope factors) and biases (gpt-oss's per-expert biases are 2-D)
    // stay F32, as llama.cpp's quantizer leaves them; --expert-type overrides --type for the
    // stacked expert matrices (the 3-D *_exps tensors).
    TensorType requested = c.type;
    if (dims.size() == 3 && name.find("_exps.") != std::string::npos && c.expert_type) requested = *c.expert_type;
    // BERT's token_types stays F32 as the converter writes it (llama.cpp adds its row with
    // ggml_add, which takes no quantised or F16 operand there).
    const bool keep_f32 = dims.size() == 1 || rule.keep_f32 || rule.init == Init::Bias || name == "token_types.weight";
    const TensorType type = keep_f32 ? TensorType::F32 : matrix_storage_type(requested, dims[0]);
    std::vector<float> values = initial_values(rule, name, dims, c, sizes);
    if (plant) apply_plant(*plant, name, dims, values);
    std::vector<uint8_t> bytes = encode(type, values);
    return {name, type, std::move(dims), std::move(bytes)};
}

// Makes every tensor of `jobs` (rule, name) on up to `threads` threads (0: one per core) and adds
// them to `w` in the order of `jobs`, so the file does not depend on the thread count.
void add_tensors(gguf::Writer& w, const std::vector<std::pair<const TensorRule*, std::string>>& jobs,
                 const RandomModelConfig& c, const Sizes& sizes, const PlantContext* plant, int threads) {
    size_t n_threads = threads > 0 ? size_t(threads) : std::max(1u, std::thread::hardware_concurrency());
    n_threads = std::min(n_threads, jobs.size());
    if (n_threads <= 1) {
        for (const auto& [rule, name] : jobs) {
            MadeTensor t = make_tensor(*rule, name, c, sizes, plant);
            w.add_tensor(t.name, t.type, std::move(t.dims), std::move(t.bytes));
        }
        return;
    }
    // The largest tensors first, so that one huge embedding does not start last.
    std::vector<size_t> order(jobs.size());
    std::vector<uint64_t> elements(jobs.size(), 1);
    for (size_t i = 0; i < jobs.size(); ++i) {
        order[i] = i;
        for (Dim d : jobs[i].first->dims) elements[i] *= sizes.of(d);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return elements[a] > elements[b]; });
    std::vector<MadeTensor> made(jobs.size());
    std::vector<std::exception_ptr> errors(jobs.size());
    std::atomic<size_t> next{0};
    auto work = [&] {
        for (size_t k; (k = next.fetch_add(1)) < order.size();) {
            const size_t i = order[k];
            try {
                made[i] = make_tensor(*jobs[i].first, jobs[i].second, c, sizes, plant);
            } catch (...) {
                errors[i] = std::current_exception();
            }
        }
    };
    std::vector<std::thread> pool;
    for (size_t t = 0; t < n_threads; ++t) pool.emplace_back(work);
    for (std::thread& t : pool) t.join();
    for (size_t i = 0; i < jobs.size(); ++i) {
        if (errors[i]) std::rethrow_exception(errors[i]);
        w.add_tensor(made[i].name, made[i].type, std::move(made[i].dims), std::move(made[i].bytes));
    }
}

// Checks a --plant-super-weight against the model; returns what apply_plant needs.
PlantContext plant_context(const RandomModelConfig& c, const gguf::File& vocab) {
    const PlantedSuperWeight& p = *c.plant;
    const std::vector<std::string> archs = {"llama", "qwen2", "qwen3", "smollm3", "qwen3moe", "olmoe"};
    require(std::find(archs.begin(), archs.end(), c.arch) != archs.end(),
            "--plant-super-weight: supported for llama, qwen2, qwen3, smollm3, qwen3moe and olmoe, not " + c.arch +
                " (its FFN has no separate gate/up, or a norm after the FFN would rescale the activation)");
    PlantContext ctx;
    ctx.plant = p;
    ctx.n_embd = c.n_embd;
    ctx.moe_layer = is_moe_layer(c, p.layer);
    require(p.layer < c.n_layer, "--plant-super-weight: layer " + std::to_string(p.layer) + " is not below --n-layer " +
                                     std::to_string(c.n_layer));
    require(c.n_embd >= 2 && p.row < c.n_embd, "--plant-super-weight: row " + std::to_string(p.row) +
                                                   " is not below --n-embd " + std::to_string(c.n_embd));
    const int n_ff = ctx.moe_layer ? c.n_ff_exp : c.n_ff;
    require(p.col < n_ff, "--plant-super-weight: col " + std::to_string(p.col) + " is not below the FFN width " +
                              std::to_string(n_ff));
    if (ctx.moe_layer)
        require(p.expert < c.n_expert, "--plant-super-weight: expert " + std::to_string(p.expert) +
                                           " is not below --n-expert " + std::to_string(c.n_expert));
    else
        require(p.expert < 0, "--plant-super-weight: layer " + std::to_string(p.layer) + " has no experts; drop the EXPERT field");
    const auto bos = vocab.get_int("tokenizer.ggml.bos_token_id");
    require(bos.has_value() && *bos >= 0, "--plant-super-weight: the vocabulary (--vocab-from) has no BOS token; the plant fires on it");
    ctx.bos = int32_t(*bos);
    return ctx;
}

void copy_tokenizer(gguf::Writer& w, const gguf::File& vocab) {
    for (const std::string& key : vocab.keys_in_order())
        if (key.rfind("tokenizer.", 0) == 0) w.set(key, *vocab.find(key));
}

}  // namespace

RopeScalingConfig parse_rope_scaling(const std::string& text) {
    std::vector<std::string> parts;
    std::stringstream in(text);
    for (std::string part; std::getline(in, part, ':');) parts.push_back(part);
    RopeScalingConfig r;
    const std::string kind = parts.empty() ? "" : parts[0];
    auto expect_parts = [&](size_t n, const char* form) {
        require(parts.size() == n, "--rope-scaling '" + text + "': expected " + form);
    };
    if (kind == "none") {
        expect_parts(1, "none");
    } else if (kind == "linear") {
        expect_parts(2, "linear:FACTOR");
        r.kind = RopeScalingConfig::Kind::Linear;
        r.factor = parse_float(parts[1], "factor");
    } else if (kind == "yarn") {
        expect_parts(3, "yarn:FACTOR:ORIGINAL_CONTEXT");
        r.kind = RopeScalingConfig::Kind::Yarn;
        r.factor = parse_float(parts[1], "factor");
        r.original_context = parse_int(parts[2], "original context");
    } else if (kind == "llama3") {
        expect_parts(5, "llama3:FACTOR:LOW_FREQ_FACTOR:HIGH_FREQ_FACTOR:ORIGINAL_CONTEXT");
        r.kind = RopeScalingConfig::Kind::Llama3;
        r.factor = parse_float(parts[1], "factor");
        r.low_freq_factor = parse_float(parts[2], "low frequency factor");
        r.high_freq_factor = parse_float(parts[3], "high frequency factor");
        r.original_context = parse_int(parts[4], "original context");
    } else if (kind == "longrope") {
        expect_parts(2, "longrope:ORIGINAL_CONTEXT");
        r.kind = RopeScalingConfig::Kind::LongRope;
        r.original_context = parse_int(parts[1], "original context");
    } else {
        throw ConfigError("--rope-scaling '" + text + "': unknown kind (linear, yarn, llama3, longrope or none)");
    }
    return r;
}

float longrope_attn_factor(int n_ctx, int original_context) {
    const double scale = double(n_ctx) / double(original_context);
    if (scale <= 1.0) return 1.0f;
    return float(std::sqrt(1.0 + std::log(scale) / std::log(double(original_context))));
}

std::vector<std::string> architectures() {
    std::vector<std::string> names;
    for (const ArchTable& t : arch_tables()) names.push_back(t.name);
    return names;
}

TensorType matrix_storage_type(TensorType requested, uint64_t row_length) {
    auto fits = [row_length](TensorType t) { return row_length % gguf::type_traits(t)->block_size == 0; };
    if (fits(requested)) return requested;
    TensorType fallback = TensorType::F16;
    switch (requested) {
        case TensorType::Q2_K:
        case TensorType::Q3_K: fallback = TensorType::Q4_0; break;
        case TensorType::Q4_K: fallback = TensorType::Q5_0; break;
        case TensorType::Q5_K: fallback = TensorType::Q5_1; break;
        case TensorType::Q6_K: fallback = TensorType::Q8_0; break;
        default: break;
    }
    return fits(fallback) ? fallback : TensorType::F16;
}

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

gguf::Writer build_random_model(const RandomModelConfig& config, const gguf::File& vocab, int threads) {
    // RWKV-7 has no attention: its own writer (rwkv7_model.h), not a table.
    if (config.arch == "rwkv7") return build_rwkv7_model(config, Rwkv7Sizes{}, vocab);
    const ArchTable* arch = find_arch_table(config.arch);
    if (!arch) {
        std::string list;
        for (const auto& n : architectures()) list += (list.empty() ? "" : ", ") + n;
        throw ConfigError("--arch '" + config.arch + "' is not known (known: " + list + ", rwkv7)");
    }
    const RandomModelConfig c = validated(config, *arch);
    const auto tokens = vocab.get_strings("tokenizer.ggml.tokens");
    if (!tokens || tokens->empty())
        throw ConfigError(vocab.path() + ": no tokenizer.ggml.tokens: not a vocabulary file (--vocab-from)");

    Sizes sizes{};
    sizes.embd = uint64_t(c.n_embd);
    sizes.vocab = tokens->size();
    sizes.ff = uint64_t(c.n_ff);
    sizes.head_dim = uint64_t(c.head_dim);
    sizes.head = uint64_t(c.n_head);
    sizes.q_proj = uint64_t(c.n_head) * sizes.head_dim;
    sizes.kv_proj = uint64_t(c.n_head_kv) * sizes.head_dim;
    sizes.rope_half = uint64_t(c.rope_dims) / 2;
    sizes.ctx = uint64_t(c.n_ctx);
    sizes.expert = uint64_t(c.n_expert);
    sizes.ff_exp = uint64_t(c.n_ff_exp);
    sizes.q_lora = uint64_t(std::max(c.q_lora_rank, 0));
    sizes.kv_lora = uint64_t(c.kv_lora_rank);
    sizes.rope = uint64_t(c.rope_dims);
    sizes.v_head = uint64_t(c.v_head_dim);
    sizes.ff_shared = uint64_t(c.n_ff_exp) * uint64_t(std::max(c.n_expert_shared, 0));
    sizes.token_types = uint64_t(std::max<int64_t>(vocab.get_int("tokenizer.ggml.token_type_count").value_or(2), 1));
    sizes.ssm_inner = uint64_t(c.ssm_inner);
    sizes.ssm_head = c.ssm_head_dim > 0 ? uint64_t(c.ssm_inner / c.ssm_head_dim) : 0;
    sizes.ssm_conv = uint64_t(c.ssm_conv);
    sizes.ssm_state = uint64_t(c.ssm_state);
    sizes.ssm_groups = uint64_t(std::max(c.ssm_groups, 1));
    sizes.ssm_dt_rank = uint64_t(c.ssm_dt_rank);
    sizes.conv_l_cache = uint64_t(c.conv_l_cache);

    gguf::Writer w;
    const std::string a = arch->name + ".";
    w.set("general.architecture", Value::from_string(arch->name));
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
    const bool pure_ssm = arch->ssm && arch->hybrid == Hybrid::None && !arch->ssm_beside_attention;
    std::vector<int32_t> kv_per_layer, ff_per_layer;
    for (char part : c.layers) {
        kv_per_layer.push_back(part == '*' ? c.n_head_kv : 0);
        ff_per_layer.push_back(part == '-' ? c.n_ff : 0);
    }
    w.set(a + "feed_forward_length", arch->hybrid == Hybrid::OnePartPerLayer ? Value::from_i32s(ff_per_layer)
                                     : Value::from_u32(pure_ssm ? 0u : uint32_t(c.n_ff)));
    w.set(a + "attention.head_count", Value::from_u32(pure_ssm ? 0u : uint32_t(c.n_head)));
    if (arch->hybrid != Hybrid::None && arch->hybrid != Hybrid::DeltaNetOrAttention)
        w.set(a + "attention.head_count_kv", Value::from_i32s(kv_per_layer));
    else if (arch->writes_head_count_kv)
        w.set(a + "attention.head_count_kv", Value::from_u32(uint32_t(c.n_head_kv)));
    w.set(a + (arch->norm == NormKind::RMSNorm ? "attention.layer_norm_rms_epsilon" : "attention.layer_norm_epsilon"),
          Value::from_f32(arch->norm_eps));
    if (arch->uses_rope) {
        w.set(a + "rope.freq_base", Value::from_f32(c.rope_freq_base));
        w.set(a + "rope.dimension_count", Value::from_u32(uint32_t(c.rope_dims)));
    }
    if (arch->shortconv) w.set(a + "shortconv.l_cache", Value::from_u32(uint32_t(c.conv_l_cache)));
    if (arch->ssm) {
        w.set(a + "ssm.conv_kernel", Value::from_u32(uint32_t(c.ssm_conv)));
        w.set(a + "ssm.inner_size", Value::from_u32(uint32_t(c.ssm_inner)));
        w.set(a + "ssm.state_size", Value::from_u32(uint32_t(c.ssm_state)));
        if (arch->mamba1) {  // dt's rank; no groups
            w.set(a + "ssm.time_step_rank", Value::from_u32(uint32_t(c.ssm_dt_rank)));
            if (c.ssm_dt_b_c_rms) w.set(a + "ssm.dt_b_c_rms", Value::from_bool(true));
        } else {
            w.set(a + "ssm.time_step_rank", Value::from_u32(uint32_t(c.ssm_inner / c.ssm_head_dim)));
            w.set(a + "ssm.group_count", Value::from_u32(uint32_t(c.ssm_groups)));
        }
    }
    if (arch->delta_net) {
        w.set(a + "full_attention_interval", Value::from_u32(uint32_t(full_attention_interval(c.layers))));
        // IMRoPE's sections over the rotated pairs (time, height, width, extra), as Qwen3.5's
        // 11, 11, 10, 0 over 32: text positions give every section the same angle.
        const int32_t pairs = c.rope_dims / 2, hw = pairs / 3;
        if (!arch->delta_ba_grouped) w.set(a + "rope.dimension_sections", Value::from_i32s({pairs - 2 * hw, hw, hw, 0}));
    }
    if (arch->mla) {
        // As the converter writes them: the cached key is [latent; rope key] (kv_lora + qk_rope),
        // the cached value the latent; the *_mla lengths are the per-head sizes after
        // decompression (qk_nope + qk_rope, v_head_dim). Their presence switches llama.cpp to MLA.
        w.set(a + "attention.q_lora_rank", Value::from_u32(uint32_t(c.q_lora_rank)));
        w.set(a + "attention.kv_lora_rank", Value::from_u32(uint32_t(c.kv_lora_rank)));
        w.set(a + "attention.key_length", Value::from_u32(uint32_t(c.kv_lora_rank + c.rope_dims)));
        w.set(a + "attention.value_length", Value::from_u32(uint32_t(c.kv_lora_rank)));
        w.set(a + "attention.key_length_mla", Value::from_u32(uint32_t(c.head_dim)));
        w.set(a + "attention.value_length_mla", Value::from_u32(uint32_t(c.v_head_dim)));
    } else if (arch->always_write_head_dims || c.head_dim * c.n_head != c.n_embd) {
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
        if (arch->writes_expert_ff_length) w.set(a + "expert_feed_forward_length", Value::from_u32(uint32_t(c.n_ff_exp)));
        if (c.moe_layer_step > 0 && arch->writes_moe_layer_step)
            w.set(a + "interleave_moe_layer_step", Value::from_u32(uint32_t(c.moe_layer_step)));
        if (arch->shared_expert_ff_key) w.set(a + "expert_shared_feed_forward_length", Value::from_u32(uint32_t(c.n_ff)));
    }
    if (arch->mla) {
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
    for (const auto& [key, value] : arch->extra_metadata) w.set(a + key, value);
    copy_tokenizer(w, vocab);
    // llama.cpp's BERT loader needs the token type count (the rows of token_types).
    if (arch->has_dim(Dim::TokenTypes) && !vocab.has("tokenizer.ggml.token_type_count"))
        w.set("tokenizer.ggml.token_type_count", Value::from_u32(uint32_t(sizes.token_types)));

    std::optional<PlantContext> plant;
    if (c.plant) plant = plant_context(c, vocab);
    const PlantContext* planted = plant ? &*plant : nullptr;
    std::vector<std::pair<const TensorRule*, std::string>> jobs;
    for (const TensorRule& rule : arch->globals)
        if (present(rule.presence, c, -1)) jobs.emplace_back(&rule, rule.name);
    for (int layer = 0; layer < c.n_layer; ++layer)
        for (const TensorRule& rule : arch->per_layer)
            if (present(rule.presence, c, layer)) jobs.emplace_back(&rule, replace_layer(rule.name, layer));
    add_tensors(w, jobs, c, sizes, planted, threads);
    return w;
}

void write_random_model(const RandomModelConfig& config, const std::string& vocab_path, const std::string& out_path,
                        int threads) {
    auto vocab = gguf::File::open(vocab_path);
    build_random_model(config, *vocab, threads).write(out_path);
}

}  // namespace vkllm::random_model
