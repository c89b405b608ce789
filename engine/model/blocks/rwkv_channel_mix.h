// RWKV-7's channel mix (llama.cpp's build_rwkv7_channel_mix), a layer's FFN:
//   h = LayerNorm(x; attn_norm_2);  xk = h + (shift(h) - h) * lerp_k   (the channel mix's own
//                                                                      token shift, in RwkvState)
//   x += W_value relu(W_key xk)^2
#pragma once

#include "model/blocks/block.h"
#include "model/blocks/rwkv_time_mix.h"

namespace vkllm::model {

// From the normed input h (f32 [n_tokens, n_embd], packed) to relu(W_key xk)^2 in state.ffn()
// [n_tokens, n_ff], ending with a barrier; the caller adds W_value of it to the residual stream.
void record_rwkv7_channel_mix(gpu::Stream& s, const RwkvSpec& spec, const RwkvLayerWeights& w, const RwkvState& state,
                              int layer, const ops::TensorView& h, const RwkvMatmul& matmul);

class RwkvChannelMixBlock : public Block {
public:
    RwkvChannelMixBlock(int layer, const RwkvSpec& spec, const RwkvWeights& weights, const RwkvState& state)
        : layer_(layer), spec_(spec), weights_(weights), state_(state) {}
    void record(Recording& r) const override;

private:
    int layer_;
    const RwkvSpec& spec_;
    const RwkvWeights& weights_;
    const RwkvState& state_;
};

}  // namespace vkllm::model
