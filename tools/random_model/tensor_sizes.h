// The sizes every symbolic Dim of the architecture tables (arch_tables.h) resolves to for one
// configuration.
#pragma once

#include <cstdint>

#include "gguf/gguf.h"
#include "random_model/arch_tables.h"
#include "random_model/random_model.h"

namespace vkllm::random_model {

struct Sizes {
    uint64_t embd, vocab, ff, q_proj, kv_proj, head_dim, head, rope_half, ctx, expert, ff_exp;
    uint64_t q_lora, kv_lora, rope, v_head, ff_shared;  // deepseek2 (multi-head latent attention)
    uint64_t token_types;                               // bert
    uint64_t ssm_inner, ssm_head, ssm_conv, ssm_state, ssm_groups;  // mamba2
    uint64_t ssm_dt_rank;                                            // mamba
    uint64_t conv_l_cache;                                           // lfm2

    uint64_t of(Dim d) const;
};

// The sizes of a validated configuration with a vocabulary of n_vocab tokens; BERT's token types
// are the vocabulary's tokenizer.ggml.token_type_count (2 without it).
Sizes sizes_of(const RandomModelConfig& c, const gguf::File& vocab, uint64_t n_vocab);

}  // namespace vkllm::random_model
