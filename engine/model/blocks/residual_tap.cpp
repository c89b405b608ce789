#include "model/blocks/residual_tap.h"

namespace vkllm::model {

void ResidualTap::record(Recording& r) const {
    r.edits.record(r.s, r.scratch.x, r.n_tokens, layer_);
    r.probe.copy_residual(r.s, r.scratch.x, layer_, r.n_tokens, r.probes);
}

}  // namespace vkllm::model
