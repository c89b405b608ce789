// The logit lens: each lens layer's newest residual rows (copied by the residual taps: up to
// ProbeConfig::logit_lens_positions of the pass) through the final norm, the output projection,
// the final scale and soft-cap, then softmax and top-k on the GPU (ops::lens_top_k), one lens
// layer at a time through one logits buffer; only the (probability, id) pairs reach the host.
#pragma once

#include "model/blocks/block.h"

namespace vkllm::model {

class LogitLensBlock : public Block {
public:
    void record(Recording& r) const override;
};

}  // namespace vkllm::model
