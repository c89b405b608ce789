// The recurrent layers' state of one session (state-space layers: Mamba-2, Mamba-1, Falcon-H1's
// Mamba-2 beside attention; LFM2's short convolutions), the sibling of the KV cache (kv_cache.h
// says what such a state answers). Per layer with a state-space mixer:
//   conv [channels][d_conv - 1]          the short convolution's last d_conv - 1 inputs,
//   ssm  [n_head][head_dim][d_state]     the selective scan's state (ggml's layouts, f32;
//                                        Mamba-1: [d_inner][d_state]),
// and per LFM2 short-convolution layer the conv state alone, [n_embd][l_cache - 1] (the last
// products B * u),
// a fixed size whatever the context: bytes() is the whole state of the sequence. Every step reads
// and overwrites it, so it folds every position it has seen into one value and cannot forget
// positions: truncate(n) holds only for n at its newest position (or 0); otherwise it returns
// false and the session goes back to an earlier copy of the state (StateSnapshots,
// state_snapshots.h: state_buffers() copied on the GPU, then restored(n)) and re-evaluates the
// kept tokens after it, or re-evaluates them from position 0, where begin_pass zeroes the state.
// Also here, sized for a pass of n_batch tokens: the mixer's work buffers (the
// in-projection's rows, the convolved channels, the scan's output). RWKV-7's layers keep theirs
// in an RwkvState (rwkv_state.h) owned here, which passes, truncation and bytes() cover alike.
#pragma once

#include <cstdint>
#include <vector>

#include "gpu/buffer.h"
#include "model/rwkv_state.h"
#include "model/spec.h"

namespace vkllm::gpu { class Context; }

namespace vkllm::model {

class RecurrentState {
public:
    struct Layer {
        bool present = false;  // the layer has a state-space mixer or a short convolution
        gpu::Buffer conv;      // [conv_channels][d_conv - 1] f32
        gpu::Buffer ssm;       // [n_head][head_dim][d_state] f32; none for a short convolution
    };

    RecurrentState() = default;  // no recurrent layers
    // States for every state-space and short-convolution layer of spec, and work buffers for passes
    // of n_batch tokens (a short convolution uses in_proj and y).
    RecurrentState(gpu::Context& ctx, const ModelSpec& spec, int n_batch);

    bool empty() const { return bytes() == 0; }
    // Before a pass over positions pos0..pos0 + n_tokens is submitted: pos0 == 0 zeroes every
    // state (a new sequence); otherwise pos0 must be the next position (std::logic_error if not).
    void begin_pass(int pos0, int n_tokens);
    void reset();
    // True when nothing is lost: n is 0 or the number of positions seen. False otherwise (the
    // caller restores a snapshot or re-evaluates from position 0); the state is then stale until
    // restored(p) or begin_pass(0, ...).
    bool truncate(int n);
    // Positions folded into the state (-1: stale, after a truncate that lost positions).
    int positions() const { return seen_; }
    // State bytes of the sequence (conv + ssm over layers, LFM2's conv states, RWKV's shifts and
    // wkv states), constant in the context length.
    uint64_t bytes() const;
    // Every buffer bytes() counts, in a fixed order: the whole state of the sequence, what a
    // snapshot copies. A new kind of state lists its buffers here.
    std::vector<const gpu::Buffer*> state_buffers() const;
    // The state buffers were just overwritten (on the GPU) with a copy of the state after the
    // first n positions (n > 0): the next pass continues at position n.
    void restored(int n);
    // The work buffers' bytes (counted with the scratch).
    uint64_t work_bytes() const;

    const Layer& layer(int l) const { return layers_[size_t(l)]; }
    const gpu::Buffer& in_proj() const { return in_proj_; }  // [n_batch][max in-projection rows]
    const gpu::Buffer& xbc() const { return xbc_; }          // [n_batch][max conv channels]
    const gpu::Buffer& y() const { return y_; }              // [n_batch][max d_inner or short-conv channels]
    // Mamba-1 only: x_proj's outputs, dt_low [n_batch][dt_rank] then B | C [n_batch][2 d_state]
    // (each packed), and dt [n_batch][d_inner].
    const gpu::Buffer& x_db() const { return x_db_; }
    const gpu::Buffer& dt() const { return dt_; }
    // RWKV-7's layers' state and work buffers (empty without RWKV layers).
    const RwkvState& rwkv() const { return rwkv_; }

private:
    std::vector<Layer> layers_;
    gpu::Buffer in_proj_, xbc_, y_;
    gpu::Buffer x_db_, dt_;  // Mamba-1
    RwkvState rwkv_;
    int seen_ = 0;  // positions folded into the state
    bool zero_ = true;  // every state is zero (fresh or reset)
};

}  // namespace vkllm::model
