// The state-space mixers, a layer's block in place of attention: Mamba-2 and Mamba-1 over the
// session's RecurrentState.
// With the state probes on, each block hands its scan's operands to the probe recorder's tap
// (probe_state.h) just before the scan; a layer not probed records nothing.
#pragma once

#include "model/blocks/block.h"
#include "model/recurrent_state.h"

namespace vkllm::model {

// What the Mamba-2 and Mamba-1 mixers share: the layer, its state, the normalised in-projection,
// the short convolution and the out-projection with its residual add.
class StateSpaceMixer : public Block {
protected:
    StateSpaceMixer(int layer, const RecurrentState& state) : layer_(layer), state_(state) {}

    const SsmSpec& spec(const Recording& r) const { return r.spec.layers[size_t(layer_)].ssm; }
    const LayerWeights& weights(const Recording& r) const { return r.w.layers[size_t(layer_)]; }
    // in_proj = W_in norm(x) (decode's RMSNorm may run inside the matvec), then a barrier (`why`).
    void record_in_projection(Recording& r, const char* why) const;
    // xbc = silu(conv1d(x, carrying the conv state) + b_conv), packed [n_tokens][x.cols] rows of
    // the state's xbc buffer (x: columns of the in-projection), then a barrier (`why`).
    void record_conv(Recording& r, const ops::TensorView& x, const char* why) const;
    // x += W_out y, y the scan's output [n_tokens][d_inner].
    void record_output(Recording& r) const;

    int layer_;
    const RecurrentState& state_;
};

// Mamba-2's mixer (llama.cpp's build_mamba2_layer), a layer's block in place of attention:
//   h = norm(x); [z | xBC | dt] = W_in h
//   xBC = silu(conv1d(xBC, carrying the conv state) + b_conv);  x | B | C = xBC
//   y = scan(x, dt + dt_bias, A, B, C; carrying the SSM state) + D x;  y *= silu(z)
//   y = grouped RMSNorm(y) * ssm_norm;  x += W_out y
// The conv and SSM states are the session's RecurrentState; each pass reads and overwrites them
// (a decode step is the same dispatches with one token, so a replayed recording serves it).
// Falcon-H1 runs this block unchanged beside attention: both read the layer input normalised by
// attn_norm, and attention's output projection is added after it (layer_blocks.h).
class SsmMixerBlock : public StateSpaceMixer {
public:
    SsmMixerBlock(int layer, const RecurrentState& state) : StateSpaceMixer(layer, state) {}
    void record(Recording& r) const override;
};

// Mamba-1's mixer (llama.cpp's build_mamba_layer), a layer's block in place of attention:
//   h = norm(x); [x | z] = W_in h;  x = silu(conv1d(x, carrying the conv state) + b_conv)
//   [dt_low | B | C] = W_x x;  dt = W_dt dt_low + dt_bias
//   y = (scan(x, dt, A, B, C; carrying the SSM state) + D x) * silu(z);  x += W_out y
// A decays per channel and state (ssm_a [d_inner][d_state]); one group of B and C. Jamba and
// Falcon-Mamba normalise dt_low, B and C (RMS) after x_proj (SsmSpec::dt_b_c_norm).
class Mamba1MixerBlock : public StateSpaceMixer {
public:
    Mamba1MixerBlock(int layer, const RecurrentState& state) : StateSpaceMixer(layer, state) {}
    void record(Recording& r) const override;
};

}  // namespace vkllm::model
