// Residual-stream edits (vkllm::ResidualEdit) inside the forward pass: after the embeddings or a
// layer, ops::residual_edit sets a channel of every token of the pass.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "vkllm/session.h"

namespace vkllm::gpu { class Context; }

namespace vkllm::model {

class ResidualEdits {
public:
    ResidualEdits(gpu::Context& ctx, int n_layer, int n_embd) : ctx_(&ctx), n_layer_(n_layer), n_embd_(n_embd) {}

    // Replaces the edits (and restarts the Mean edits' running sums). Throws
    // std::invalid_argument for a layer outside -1..n_layer-1 or a channel outside 0..n_embd-1.
    void set(const std::vector<ResidualEdit>& edits);
    // Restarts the Mean edits' running means (a new sequence, or a truncated one).
    void reset_state();
    bool empty() const { return edits_.empty(); }
    // Records the edits after layer l (-1: the embeddings) of x's n_tokens rows, with the barrier
    // after them; nothing where l has none.
    void record(gpu::Stream& s, const gpu::Buffer& x, int n_tokens, int l) const;
    uint64_t bytes() const { return records_.size() + state_.size(); }

private:
    gpu::Context* ctx_;
    int n_layer_, n_embd_;
    // ChannelEdit records grouped by layer (host-visible), their Mean state (sum, count) per
    // edit, and each layer's range of edits (layer -> first, count).
    std::vector<ResidualEdit> edits_;
    gpu::Buffer records_, state_;
    std::map<int, std::pair<int, int>> ranges_;
};

}  // namespace vkllm::model
