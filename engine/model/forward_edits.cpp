// Residual-stream edits (vkllm::ResidualEdit) inside the forward pass: after the embeddings or a
// layer, ops::residual_edit sets a channel of every token of the pass.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "model/forward.h"
#include "ops/ops.h"

namespace vkllm::model {

void Forward::set_residual_edits(const std::vector<ResidualEdit>& edits) {
    for (const ResidualEdit& e : edits) {
        if (e.layer < -1 || e.layer >= spec_.n_layer)
            throw std::invalid_argument("residual edit layer " + std::to_string(e.layer) + " is outside -1.." +
                                        std::to_string(spec_.n_layer - 1));
        if (e.channel < 0 || e.channel >= spec_.n_embd)
            throw std::invalid_argument("residual edit channel " + std::to_string(e.channel) + " is outside 0.." +
                                        std::to_string(spec_.n_embd - 1));
    }
    // Grouped by layer, in the given order within a layer: one dispatch per edited layer.
    edits_ = edits;
    std::stable_sort(edits_.begin(), edits_.end(),
                     [](const ResidualEdit& a, const ResidualEdit& b) { return a.layer < b.layer; });
    edit_ranges_.clear();
    edits_buf_ = {};
    edit_state_ = {};
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
        auto [it, fresh] = edit_ranges_.try_emplace(e.layer, int(i), 0);
        it->second.second += 1;
    }
    edits_buf_ = gpu::Buffer(ctx_, records.size() * sizeof(ops::ChannelEdit), gpu::Memory::Host);
    std::memcpy(edits_buf_.mapped(), records.data(), edits_buf_.size());
    edit_state_ = gpu::Buffer(ctx_, records.size() * 2 * sizeof(float), gpu::Memory::Host);
    reset_edit_state();
}

void Forward::reset_edit_state() {
    // Host-visible: no GPU work uses it between steps.
    if (edit_state_.valid()) std::memset(edit_state_.mapped(), 0, edit_state_.size());
}

}  // namespace vkllm::model
