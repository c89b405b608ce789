// RWKV-7's recurrent state of one session, the sibling of RecurrentState's state-space layers
// (recurrent_state.h says what such a state answers). Per layer:
//   shift [2][n_embd]                    the previous token's normed input of the time mix, then
//                                        of the channel mix (llama.cpp's token_shift, count 2)
//   wkv   [n_head][head_size][head_size] the generalized delta rule's state (ggml's layout)
// a fixed size whatever the context. Every pass reads and overwrites it, so truncate(n) holds
// only for n at its newest position (or 0); otherwise the session restores a snapshot
// (state_snapshots.h) or re-evaluates from position 0, where begin_pass zeroes the state. Also
// here, sized for a pass of n_batch tokens, the mixing blocks' work buffers.
#pragma once

#include <cstdint>
#include <vector>

#include "gpu/buffer.h"
#include "model/rwkv_spec.h"

namespace vkllm::gpu { class Context; }

namespace vkllm::model {

class RwkvState {
public:
    struct Layer {
        gpu::Buffer shift;  // [2][n_embd] f32
        gpu::Buffer wkv;    // [n_head * head_size][head_size] f32
    };

    RwkvState() = default;  // no RWKV layers
    RwkvState(gpu::Context& ctx, const RwkvSpec& spec, int n_layer, int n_batch);

    bool empty() const { return layers_.empty(); }
    int n_batch() const { return n_batch_; }
    // As RecurrentState's: pos0 == 0 zeroes the state; otherwise pos0 must be the next position.
    void begin_pass(int pos0, int n_tokens);
    void reset();
    bool truncate(int n);
    // State bytes of the sequence (shifts + wkv over layers), constant in the context length.
    uint64_t bytes() const;
    uint64_t work_bytes() const;
    // Appends every buffer bytes() counts (each layer's shift, then wkv) to `out`.
    void append_state_buffers(std::vector<const gpu::Buffer*>& out) const;
    // As RecurrentState::restored: the buffers now hold the state after n positions.
    void restored(int n);

    const Layer& layer(int l) const { return layers_[size_t(l)]; }
    // Work buffers, rows of a pass of up to n_batch tokens (C = n_embd):
    const gpu::Buffer& mixed() const { return mixed_; }    // [6][n_batch][C]: the lerps r, w, k, v, a, g
    const gpu::Buffer& proj() const { return proj_; }      // [n_batch][7 C]: r | w | k | v | a | b | g
    const gpu::Buffer& lora() const { return lora_; }      // the loras' inner rows, [n_batch][rank] each, packed one after another
    const gpu::Buffer& v_mix() const { return v_mix_; }    // [n_batch][C]: the value lora's output
    const gpu::Buffer& v_first() const { return v_first_; }  // [n_batch][C]: layer 0's values
    const gpu::Buffer& out() const { return out_; }        // [n_batch][C]: wkv's output
    const gpu::Buffer& ffn() const { return ffn_; }        // [n_batch][n_ff]: the channel mix's key

private:
    std::vector<Layer> layers_;
    gpu::Buffer mixed_, proj_, lora_, v_mix_, v_first_, out_, ffn_;
    int n_batch_ = 0;
    int seen_ = 0;
    bool zero_ = true;
};

}  // namespace vkllm::model
