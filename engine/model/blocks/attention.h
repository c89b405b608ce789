// Softmax attention over a layer's KV cache: x += Wo · attention(q, k, v) with q, k, v projected
// from norm(x) (Pre/Sandwich) or x itself (Post), shaped by the layer's spec (fused or biased
// projections, per-head or full-width QK-norm, RoPE or none, window, soft-cap, sinks); Post and
// Sandwich placements normalise the block's output before the residual add.
#pragma once

#include "model/blocks/block.h"

namespace vkllm::model {

class AttentionBlock : public Block {
public:
    explicit AttentionBlock(int layer) : layer_(layer) {}
    void record(Recording& r) const override;

private:
    int layer_;
};

// The part every attention kind shares: this pass's new k/v rows (Scratch::k_new, v_new) into
// layer l's cache unless kv_in_cache says they are there already, then attention of the queries
// in Scratch::q over the cache into Scratch::attn, and the attention probe's copy.
void record_attend(Recording& r, int l, bool kv_in_cache);

}  // namespace vkllm::model
