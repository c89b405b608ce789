// After the embeddings (layer -1) or a layer: the residual edits of that layer, then the probes'
// copies of the residual stream (all rows for the residual probes, the newest for the logit lens).
#pragma once

#include "model/blocks/block.h"

namespace vkllm::model {

class ResidualTap : public Block {
public:
    explicit ResidualTap(int layer) : layer_(layer) {}
    void record(Recording& r) const override;

private:
    int layer_;
};

}  // namespace vkllm::model
