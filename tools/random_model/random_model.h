// Random-weight GGUF models with llama.cpp's tensor names and metadata keys: the same files
// llama.cpp's converter would write for a model of that architecture, but with seeded random
// weights. Used to compare vkllm with llama.cpp on every architecture without downloading models.
//
// Architectures are described as data (arch_tables.h, a table per family): a list of tensors
// (name pattern, shape in symbolic sizes, how to initialise) plus the metadata that differs from
// the common set.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "random_model/plant.h"

namespace vkllm::random_model {

// A configuration that cannot make a valid model (the message says which option and why).
struct ConfigError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// RoPE scaling as the converter records it: linear and YaRN as `<arch>.rope.scaling.*`
// metadata; Llama 3 as a `rope_freqs.weight` tensor of per-frequency divisors; LongRoPE (Phi-3)
// as `rope_factors_long/short.weight` tensors plus `rope.scaling.attn_factor` and
// `rope.scaling.original_context_length` (no scaling type).
struct RopeScalingConfig {
    enum class Kind { None, Linear, Yarn, Llama3, LongRope };
    Kind kind = Kind::None;
    float factor = 1.0f;
    int original_context = 0;     // YaRN, Llama 3, LongRoPE: the context length the model was trained at
    float low_freq_factor = 1.0f;   // Llama 3
    float high_freq_factor = 4.0f;  // Llama 3
};

// Parses "linear:F", "yarn:F:ORIG", "llama3:F:LOW:HIGH:ORIG" or "longrope:ORIG" (or "none").
RopeScalingConfig parse_rope_scaling(const std::string& text);

struct RandomModelConfig {
    std::string arch = "llama";
    std::string name;  // general.name; empty: "random-<arch>"
    uint64_t seed = 0;
    int n_embd = 64, n_layer = 2, n_head = 4, n_head_kv = 2, n_ff = 160, n_ctx = 256;
    int head_dim = 0;                // 0: n_embd / n_head
    int rope_dims = 0;               // rotated dims per head (rope.dimension_count); 0: head_dim
    gguf::TensorType type = gguf::TensorType::F32;  // of matrices whose row length allows it
    std::optional<gguf::TensorType> expert_type;    // of the stacked expert matrices; none: `type`
    bool tied = false;               // no output.weight: the output projection is token_embd
    float rope_freq_base = 0.0f;     // 0: the architecture's usual base
    RopeScalingConfig rope_scaling;
    int sliding_window = 0;          // 0: the architecture's default (if it has sliding windows)
    float attn_softcap = 0.0f;       // attention-logit soft-cap; 0: the architecture's default
    float final_softcap = 0.0f;      // final-logit soft-cap; 0: the architecture's default
    // Granite's multipliers: residual_scale (each block's output times it before the residual
    // add), logit_scale (logits divided by it); 0: not written (llama.cpp then applies neither).
    float residual_scale = 0.0f;
    float logit_scale = 0.0f;
    int n_expert = 0;                // experts per MoE layer; 0: the architecture's default (none for llama)
    int n_expert_used = 0;           // experts chosen per token; 0: the architecture's default
    int n_ff_exp = 0;                // one expert's FFN width (qwen3moe, gpt-oss, llama4); 0: n_ff
    int moe_layer_step = 0;          // llama4: layer il is MoE when (il + 1) % step == 0; 0: the architecture's default
    // deepseek2 only (multi-head latent attention, DeepSeek MoE); there --head-dim is
    // qk_nope + qk_rope, --rope-dims is qk_rope (default half the head) and n_head_kv must be 1. Defaults (-1 / 0 / empty): DeepSeek-V3's choices.
    int q_lora_rank = -1;            // -1: 32; 0: no query compression (attn_q, V2-Lite style)
    int kv_lora_rank = 0;            // 0: 16
    int v_head_dim = 0;              // 0: qk_nope (head_dim - rope dims)
    int leading_dense = -1;          // leading_dense_block_count; -1: 1
    int n_expert_shared = 0;         // expert_shared_count; 0: 1
    int n_expert_groups = 0;         // expert_group_count (0: no groups)
    int n_group_used = 0;            // expert_group_used_count
    std::string expert_gating;       // "softmax" or "sigmoid" (expert_gating_func); empty: sigmoid
    int expert_weights_norm = -1;    // expert_weights_norm (written only when 1); -1: 1
    float expert_weights_scale = 0;  // expert_weights_scale; 0: 2.5
    float yarn_log_multiplier = 0;   // rope.scaling.yarn_log_multiplier (0.1 * mscale_all_dim; 0: not written)
    // mamba2 only (the selective state space); 0: the defaults below.
    int ssm_conv = 0;                // ssm.conv_kernel: the short convolution's taps; 0: 4
    int ssm_inner = 0;               // ssm.inner_size (d_inner); 0: 2 * n_embd (the converter's expand 2)
    int ssm_state = 0;               // ssm.state_size (d_state); 0: 16
    int ssm_head_dim = 0;            // d_inner / ssm.time_step_rank; 0: 16
    // Hybrid families (nemotron_h, granitehybrid): each layer's part, one character per layer:
    // 'M' a Mamba-2 mixer, '*' attention, '-' an FFN alone (nemotron_h); empty: the family's
    // default pattern repeated to n_layer.
    std::string layers;
    int ssm_groups = 0;
    bool two_norms = false;          // falcon: Falcon-40B's block, attention normalised by its own attn_norm_2
    bool ssm_dt_b_c_rms = false;     // mamba: ssm.dt_b_c_rms, Falcon-Mamba's unweighted norms of dt, B and C
    int conv_l_cache = 0;            // lfm2: shortconv.l_cache, the short convolution's taps; 0: 3
    int ssm_dt_rank = 0;             // mamba: ssm.time_step_rank, dt's projection rank; 0: ceil(n_embd / 16)              // ssm.group_count (n_group, dividing the heads); 0: 1
    // --plant-super-weight: a super weight that makes a massive activation on the BOS token
    // (plant.h; llama, qwen2, qwen3, smollm3, qwen3moe, olmoe).
    std::optional<PlantedSuperWeight> plant;
};

// LongRoPE's magnitude correction as convert_hf_to_gguf.py computes it for Phi-3:
// sqrt(1 + ln(s) / ln(original_context)) with s = n_ctx / original_context, 1 when s <= 1.
float longrope_attn_factor(int n_ctx, int original_context);

// Architectures this generator knows: llama, qwen2, qwen3, gemma2, gemma3, gpt2, bert, olmo2, phi3, smollm3,
// qwen3moe, olmoe, gpt-oss, llama4, deepseek2, mamba2, falcon, jais (and the others arch_tables.cpp lists).
std::vector<std::string> architectures();

// The storage type of a matrix with rows of `row_length` elements when `requested` is asked for:
// `requested` if its block divides the row, else llama.cpp's quantizer fallback (Q4_K -> Q5_0,
// Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K/Q3_K -> Q4_0) if that fits, else F16.
gguf::TensorType matrix_storage_type(gguf::TensorType requested, uint64_t row_length);

// llama.cpp's general.file_type (LLAMA_FTYPE_*) for a model whose matrices are `type`.
uint32_t file_type_of(gguf::TensorType type);

// Builds the model in memory. The tokenizer (every tokenizer.* key) is copied from `vocab`;
// n_vocab is its token count. Throws ConfigError for an invalid configuration. `threads` tensors
// are drawn and encoded at once (0: one per core); every tensor has its own random stream, so the
// bytes are the same for any count.
gguf::Writer build_random_model(const RandomModelConfig& config, const gguf::File& vocab, int threads = 1);

// The same, reading the vocabulary from a GGUF file, and writing the model to `out_path`.
void write_random_model(const RandomModelConfig& config, const std::string& vocab_path, const std::string& out_path,
                        int threads = 1);

}  // namespace vkllm::random_model
