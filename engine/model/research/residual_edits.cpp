#include "model/research/residual_edits.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "ops/ops.h"

namespace vkllm::model {

void ResidualEdits::set(const std::vector<ResidualEdit>& edits) {
    for (const ResidualEdit& e : edits) {
        if (e.layer < -1 || e.layer >= n_layer_)
            throw std::invalid_argument("residual edit layer " + std::to_string(e.layer) + " is outside -1.." +
                                        std::to_string(n_layer_ - 1));
        if (e.channel < 0 || e.channel >= n_embd_)
            throw std::invalid_argument("residual edit channel " + std::to_string(e.channel) + " is outside 0.." +
                                        std::to_string(n_embd_ - 1));
    }
    // Grouped by layer, in the given order within a layer: one dispatch per edited layer.
    edits_ = edits;
    std::stable_sort(edits_.begin(), edits_.end(),
                     [](const ResidualEdit& a, const ResidualEdit& b) { return a.layer < b.layer; });
    ranges_.clear();
    records_ = {};
    state_ = {};
    if (edits_.empty()) return;
    std::vector<ops::ChannelEdit> records;
    for (size_t i = 0; i < edits_.size(); ++i) {
        const ResidualEdit& e = edits_[i];
        ops::ChannelEdit r;
        r.channel = uint32_t(e.channel);
        r.mode = e.mode == ResidualEdit::Mode::Zero    ? ops::ChannelEdit::Zero
                 : e.mode == ResidualEdit::Mode::Value ? ops::ChannelEdit::Value
                 : e.mode == ResidualEdit::Mode::Scale ? ops::ChannelEdit::Scale
                                                       : ops::ChannelEdit::Mean;
        r.value = e.value;
        records.push_back(r);
        auto [it, fresh] = ranges_.try_emplace(e.layer, int(i), 0);
        it->second.second += 1;
    }
    records_ = gpu::Buffer(*ctx_, records.size() * sizeof(ops::ChannelEdit), gpu::Memory::Host);
    std::memcpy(records_.mapped(), records.data(), records_.size());
    state_ = gpu::Buffer(*ctx_, records.size() * 2 * sizeof(float), gpu::Memory::Host);
    reset_state();
}

void ResidualEdits::reset_state() {
    // Host-visible: no GPU work uses it between steps.
    if (state_.valid()) std::memset(state_.mapped(), 0, state_.size());
}

void ResidualEdits::record(gpu::Stream& s, const gpu::Buffer& x, int n_tokens, int l) const {
    auto range = ranges_.find(l);
    if (range == ranges_.end()) return;
    s.mark("residual_edit");
    ops::residual_edit(s, ops::f32_rows(x, n_tokens, n_embd_), records_, range->second.first, range->second.second,
                       state_);
    s.barrier("the edited residual stream is complete before the next layer and the probes read it");
}

}  // namespace vkllm::model
