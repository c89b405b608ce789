// A mixture-of-experts FFN:
//   x += sum_k w_k · W_down,e_k (silu(W_gate,e_k h) * W_up,e_k h)
// over the top_k experts e_k the router picks for each token (h = norm(x) where the layer has an
// FFN norm), plus a shared expert every token goes through where the layer has one. Routing,
// grouping and the weighted sum stay on the GPU. The routing, ffn_down and expert-load probes
// copy what they report.
#pragma once

#include "model/blocks/block.h"

namespace vkllm::model {

class MoeFfnBlock : public Block {
public:
    explicit MoeFfnBlock(int layer) : layer_(layer) {}
    void record(Recording& r) const override;

private:
    // x += the shared expert of input `in`: down_sh(silu(gate_sh in) * up_sh in).
    void record_shared_expert(Recording& r, const ops::TensorView& in) const;
    int layer_;
};

}  // namespace vkllm::model
