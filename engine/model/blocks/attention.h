// Softmax attention over a layer's KV cache: x += Wo · attention(q, k, v) with q, k, v projected
// from norm(x) (Pre/Sandwich) or x itself (Post), shaped by the layer's spec (fused or biased
// projections, per-head or full-width QK-norm, RoPE or none, window, soft-cap, sinks, a sigmoid
// gate per query element before the output projection: Qwen3-Next/3.5's gated attention); Post and
// Sandwich placements normalise the block's output before the residual add.
//
// A parallel layer (LayerSpec::parallel: Falcon) splits the block in two: AttentionBlock leaves
// the attention output in Scratch::attn, the FFN block reads and adds to the unchanged layer
// input, then AttentionOutputBlock adds Wo · attn, so both read the same x.
#pragma once

#include "model/blocks/block.h"

namespace vkllm::model {

class AttentionBlock : public Block {
public:
    // with_output false: the output projection and residual add are left to an
    // AttentionOutputBlock after the layer's FFN (the parallel block).
    explicit AttentionBlock(int layer, bool with_output = true) : layer_(layer), with_output_(with_output) {}
    void record(Recording& r) const override;

private:
    // Gated attention's product with sigmoid(gate) and its output projection.
    void record_sigmoid_gate(Recording& r, int l) const;

    int layer_;
    bool with_output_;
};

// x += Wo · Scratch::attn (+ bias, post-norm): the attention output a parallel layer's
// AttentionBlock left, added after the FFN.
class AttentionOutputBlock : public Block {
public:
    explicit AttentionOutputBlock(int layer) : layer_(layer) {}
    void record(Recording& r) const override;

private:
    int layer_;
};

// Where this pass's new key and value rows are: Scratch::k_new and v_new ([T, row] from their
// start), or, in a decode step whose Q, K and V projections ran as one stacked matvec, Scratch::q
// right after the query (q, then k, then v).
struct NewKvRows {
    const gpu::Buffer* k = nullptr;
    uint64_t k_first = 0;  // element index of token 0's key row
    const gpu::Buffer* v = nullptr;
    uint64_t v_first = 0;
    int64_t v_stride = 0;  // floats between value rows (0: packed; MLA: its latent values inside [c | kr] rows)
    // Tokens first .. first + n - 1 of rows `row` wide.
    ops::TensorView keys(int64_t first, int64_t n, int64_t row) const {
        return ops::f32_rows(*k, n, row, k_first + uint64_t(first) * uint64_t(row));
    }
    ops::TensorView values(int64_t first, int64_t n, int64_t row) const {
        const int64_t stride = v_stride > 0 ? v_stride : row;
        return ops::f32_rows(*v, n, row, v_first + uint64_t(first) * uint64_t(stride), stride);
    }
};

// The part every attention kind shares: this pass's new k/v rows (kv, or Scratch::k_new and
// v_new) into layer l's cache unless kv_in_cache says they are there already, then attention of
// the queries in Scratch::q over the cache into Scratch::attn, and the attention probe's copy.
void record_attend(Recording& r, int l, bool kv_in_cache);
void record_attend(Recording& r, int l, bool kv_in_cache, const NewKvRows& kv);

}  // namespace vkllm::model
