// The residual stream's start: each token's embedding row, scaled (Gemma), with BERT's token
// type 0 and learned positions (GPT-2, BERT) added and an embedding norm where the model has one.
#pragma once

#include "model/blocks/block.h"

namespace vkllm::model {

class EmbeddingBlock : public Block {
public:
    void record(Recording& r) const override;
};

}  // namespace vkllm::model
