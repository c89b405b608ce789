// Mamba-2's mixer (llama.cpp's build_mamba2_layer), a layer's block in place of attention:
//   h = norm(x); [z | xBC | dt] = W_in h
//   xBC = silu(conv1d(xBC, carrying the conv state) + b_conv);  x | B | C = xBC
//   y = scan(x, dt + dt_bias, A, B, C; carrying the SSM state) + D x;  y *= silu(z)
//   y = grouped RMSNorm(y) * ssm_norm;  x += W_out y
// The conv and SSM states are the session's RecurrentState; each pass reads and overwrites them
// (a decode step is the same dispatches with one token, so a replayed recording serves it).
#pragma once

#include "model/blocks/block.h"
#include "model/recurrent_state.h"

namespace vkllm::model {

class SsmMixerBlock : public Block {
public:
    SsmMixerBlock(int layer, const RecurrentState& state) : layer_(layer), state_(state) {}
    void record(Recording& r) const override;

private:
    int layer_;
    const RecurrentState& state_;
};

// Mamba-1's mixer (llama.cpp's build_mamba_layer), a layer's block in place of attention:
//   h = norm(x); [x | z] = W_in h;  x = silu(conv1d(x, carrying the conv state) + b_conv)
//   [dt_low | B | C] = W_x x;  dt = W_dt dt_low + dt_bias
//   y = (scan(x, dt, A, B, C; carrying the SSM state) + D x) * silu(z);  x += W_out y
// A decays per channel and state (ssm_a [d_inner][d_state]); one group of B and C. Jamba and
// Falcon-Mamba normalise dt_low, B and C (RMS) after x_proj (SsmSpec::dt_b_c_norm).
class Mamba1MixerBlock : public Block {
public:
    Mamba1MixerBlock(int layer, const RecurrentState& state) : layer_(layer), state_(state) {}
    void record(Recording& r) const override;

private:
    int layer_;
    const RecurrentState& state_;
};

}  // namespace vkllm::model
