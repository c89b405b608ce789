// Random-weight RWKV-7 ("Goose", llama.cpp's `rwkv7`) models: the tensors and keys llama.cpp's
// llama_model_rwkv7 loads (src/models/rwkv7.cpp) and its converter writes (conversion/rwkv.py),
// with seeded random weights drawn as the table-driven families draw theirs (random_weights.h:
// each tensor its own stream of (seed, name)). RWKV-7 has no attention, so the generic tables do
// not describe it: time mixing with low-rank (lora) projections for the decay, the in-context
// learning rate, the value residual and the gate, and channel mixing with token shifts.
#pragma once

#include "gguf/gguf.h"
#include "random_model/random_model.h"

namespace vkllm::random_model {

// RWKV-7's sizes beyond RandomModelConfig's n_embd, n_layer, n_ff and seed. The defaults make
// a valid model of three heads of 64 at n_embd 192, with every lora rank distinct (layer 0's
// value lora has the in-context-learning rank, as llama.cpp loads it).
struct Rwkv7Sizes {
    int head_size = 64;        // wkv.head_size: n_embd / head_size heads
    int decay_rank = 16;       // attention.decay_lora_rank (time_mix_w1/w2)
    int iclr_rank = 12;        // attention.iclr_lora_rank (time_mix_a1/a2; v1/v2 on layer 0)
    int value_rank = 8;        // attention.value_residual_mix_lora_rank (time_mix_v1/v2, layers > 0)
    int gate_rank = 20;        // attention.gate_lora_rank (time_mix_g1/g2)
};

// The model in memory; the tokenizer is copied from `vocab`. The large matrices (receptance, key,
// value, output, the channel mix's, token_embd, output) take config.type where their rows allow
// it (matrix_storage_type); the loras and vectors stay F32, as llama.cpp's quantizer leaves them.
// Throws ConfigError when n_embd is not a multiple of the head size, a size is not positive or
// the type cannot be written.
gguf::Writer build_rwkv7_model(const RandomModelConfig& config, const Rwkv7Sizes& sizes, const gguf::File& vocab);

}  // namespace vkllm::random_model
