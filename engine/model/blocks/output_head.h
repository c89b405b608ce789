// A decoder's output: the final norm (where the model has one), the vocabulary projection of
// the last token or of every token, Granite's logit multiplier (logits divided by it), the
// final soft-cap, and the logits' checked copy to the host
// (Scratch::logits_host, its non-finite counts in Scratch::logits_flags).
#pragma once

#include "model/blocks/block.h"

namespace vkllm::model {

class OutputHeadBlock : public Block {
public:
    void record(Recording& r) const override;
};

}  // namespace vkllm::model
