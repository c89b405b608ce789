// An encoder's output (BERT): the final hidden states pooled on the GPU (the rows themselves,
// row 0 ([CLS]), the last row, or their mean) and copied to the host checked
// (Scratch::embd_host, embd_flags); with fill-mask also every token's logits through the output
// projection, from the residual stream (Scratch::logits_host, logits_flags).
#pragma once

#include "model/blocks/block.h"
#include "model/spec.h"

namespace vkllm::model {

class EncoderHeadBlock : public Block {
public:
    EncoderHeadBlock(Pooling pooling, bool logits) : pooling_(pooling), logits_(logits) {}
    void record(Recording& r) const override;
    // Rows of n_embd the pooled output of n_tokens has.
    static int pooled_rows(Pooling pooling, int n_tokens) { return pooling == Pooling::None ? n_tokens : 1; }

private:
    Pooling pooling_;
    bool logits_;
};

}  // namespace vkllm::model
