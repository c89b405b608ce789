// LFM2's gated short convolution, a layer's block in place of attention, over the session's
// RecurrentState.
#pragma once

#include "model/blocks/block.h"
#include "model/recurrent_state.h"

namespace vkllm::model {

// LFM2's mixer (llama.cpp's build_shortconv_block):
//   h = norm(x); [B | C | u] = W_in h
//   y = C * conv1d(B * u, carrying the conv state);  x += W_out y
// The conv is depthwise and causal over l_cache taps, without bias or activation; the state holds
// the last l_cache - 1 products B * u per channel. One dispatch (ops::ssm_conv with its gates)
// does the products, the conv, the state update and the output gate; a decode step is the same
// dispatches with one token.
class ShortConvBlock : public Block {
public:
    ShortConvBlock(int layer, const RecurrentState& state) : layer_(layer), state_(state) {}
    void record(Recording& r) const override;

private:
    int layer_;
    const RecurrentState& state_;
};

}  // namespace vkllm::model
