// One unit of a forward pass (the embeddings, a layer's attention or FFN, the output head...):
// it records its dispatches, barriers and probe copies into a pass being recorded, reading and
// writing the residual stream (Scratch::x) and whatever session state it owns (the KV cache for
// attention). Blocks hold no buffers of their own: the scratch planner sizes what they share.
#pragma once

#include "model/blocks/recording.h"

namespace vkllm::model {

class Block {
public:
    virtual ~Block() = default;
    virtual void record(Recording& r) const = 0;
};

}  // namespace vkllm::model
