// A shared expert with a sigmoid gate (Qwen3-Next, Qwen3.5-MoE: llama.cpp's build_layer_ffn), the
// block after a MoE layer's routed experts (MoeSpec::n_ff_shared_gated):
//   x += sigmoid(ffn_gate_inp_shexp . h) * down_shexp(silu(gate_shexp h) * up_shexp h)
// where h is the normalised FFN input the routed experts read: MoeFfnBlock leaves it in
// Scratch::h (its norm is a dispatch there) and nothing between the two blocks writes it.
#pragma once

#include "model/blocks/block.h"

namespace vkllm::model {

class GatedSharedExpertBlock : public Block {
public:
    explicit GatedSharedExpertBlock(int layer) : layer_(layer) {}
    void record(Recording& r) const override;

private:
    int layer_;
};

}  // namespace vkllm::model
