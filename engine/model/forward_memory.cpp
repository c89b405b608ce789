// What the forward pass holds besides the KV caches and the probes: the scratch planner's
// buffers, the caches' slot positions, the expert-load counters and the residual edits
// (Session::scratch_bytes, the studio's memory view).
#include "model/forward.h"

namespace vkllm::model {

uint64_t Forward::scratch_bytes() const {
    uint64_t n = scratch_.bytes() + kv_.slot_positions_bytes() + edits_buf_.size() + edit_state_.size();
    for (const gpu::Buffer& b : expert_load_) n += b.size();
    return n;
}

}  // namespace vkllm::model
