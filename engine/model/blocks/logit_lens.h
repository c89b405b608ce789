// The logit lens: each lens layer's newest residual row (copied by the residual taps) through the
// final norm, the output projection (one row at a time, as the model's own last-token logits)
// and the final soft-cap, then copied to the host.
#pragma once

#include "model/blocks/block.h"

namespace vkllm::model {

class LogitLensBlock : public Block {
public:
    void record(Recording& r) const override;
};

}  // namespace vkllm::model
