// RWKV-7's ("Goose") sizes, as the time- and channel-mix blocks, their weights and their state
// need them: the model has no attention heads, only wkv heads of head_size channels, and four
// low-rank (lora) projections per layer. Filled from the file's metadata by the spec reader
// (llama.cpp: wkv.head_size, attention.{decay,iclr,value_residual_mix,gate}_lora_rank).
#pragma once

#include <cstdint>

namespace vkllm::model {

struct RwkvSpec {
    int64_t n_embd = 0;      // channels, n_head * head_size
    int64_t head_size = 0;   // wkv.head_size (64 in every released RWKV-7)
    int64_t n_ff = 0;        // the channel mix's key width
    int64_t decay_rank = 0;  // time_mix_w1/w2
    int64_t iclr_rank = 0;   // time_mix_a1/a2 (and layer 0's unused v1/v2)
    int64_t value_rank = 0;  // time_mix_v1/v2 on layers after the first
    int64_t gate_rank = 0;   // time_mix_g1/g2

    bool enabled() const { return head_size > 0; }
    int64_t n_head() const { return head_size > 0 ? n_embd / head_size : 0; }
    // One layer's state in floats: the two token shifts (time mix, channel mix) and the wkv
    // state, n_head matrices of head_size x head_size.
    int64_t state_floats() const { return 2 * n_embd + n_embd * head_size; }
    // The four loras' inner widths side by side (the work buffer of their first halves).
    int64_t lora_width() const { return decay_rank + iclr_rank + value_rank + gate_rank; }
};

}  // namespace vkllm::model
