// A dense FFN:
//   x += W_down · act(W_gate h + b_gate) * (W_up h + b_up) + b_down   (gated: SwiGLU / GeGLU;
//                                                                       biases only in Jais)
//   x += W_down · act(W_up h + b_up) + b_down (plain: GPT-2, BERT; Nemotron-H's relu², no biases)
// with h = norm(x) where the layer has an FFN norm, its post-norm placements, and the exact
// super-weight correction of a quantised W_down. The ffn_down probe copies its input and output.
#pragma once

#include "model/blocks/block.h"

namespace vkllm::model {

class DenseFfnBlock : public Block {
public:
    explicit DenseFfnBlock(int layer) : layer_(layer) {}
    void record(Recording& r) const override;

private:
    int layer_;
};

}  // namespace vkllm::model
