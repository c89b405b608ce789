#include "model/state_snapshots.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "gpu/device.h"
#include "gpu/error.h"
#include "gpu/stream.h"
#include "model/recurrent_state.h"

namespace vkllm::model {

StateSnapshots::StateSnapshots() = default;
StateSnapshots::~StateSnapshots() = default;
StateSnapshots::StateSnapshots(StateSnapshots&&) noexcept = default;
StateSnapshots& StateSnapshots::operator=(StateSnapshots&&) noexcept = default;

StateSnapshots::StateSnapshots(gpu::Context& ctx, const RecurrentState& state, int max_count, uint64_t max_bytes)
    : ctx_(&ctx), state_bytes_(state.bytes()) {
    if (max_count < 0) throw std::invalid_argument("StateSnapshots: a negative count");
    if (state_bytes_ == 0) return;
    capacity_ = int(std::min<uint64_t>(uint64_t(max_count), max_bytes / state_bytes_));
    if (capacity_ > 0) stream_ = std::make_unique<gpu::Stream>(ctx);
}

uint64_t StateSnapshots::bytes() const {
    uint64_t n = 0;
    for (const Slot& s : slots_) n += s.copy.size();
    return n;
}

void StateSnapshots::take(const RecurrentState& state) {
    const int p = state.positions();
    if (capacity_ == 0 || p <= 0) return;
    const std::vector<const gpu::Buffer*> buffers = state.state_buffers();
    uint64_t total = 0;
    for (const gpu::Buffer* b : buffers) total += b->size();
    if (total != state_bytes_) throw std::logic_error("StateSnapshots: the state's buffers changed size");
    for (Slot& s : slots_)
        if (s.position == p) return;  // the tokens before p are the same (drop_after keeps that true)
    if (int(slots_.size()) < capacity_) {
        try {
            slots_.push_back({0, 0, gpu::Buffer(*ctx_, state_bytes_, gpu::Memory::Device)});
        } catch (const gpu::GpuError& e) {
            // A copy is an optimisation: a device out of memory keeps the slots it has (none:
            // truncate re-evaluates from position 0) rather than failing the eval.
            if (e.kind() != gpu::GpuError::Kind::OutOfMemory) throw;
            capacity_ = int(slots_.size());
            if (capacity_ == 0) return;
        }
    }
    Slot* slot = &slots_.back();
    if (slot->age != 0)  // not the slot just made: the oldest is replaced
        slot = &*std::min_element(slots_.begin(), slots_.end(),
                                  [](const Slot& a, const Slot& b) { return a.age < b.age; });
    // Every state buffer, one after another into the slot's buffer.
    slot->position = -1;  // holds no position until the copy is done
    stream_->begin();
    uint64_t at = 0;
    for (const gpu::Buffer* b : buffers) {
        stream_->copy(*b, 0, slot->copy, at, b->size());
        at += b->size();
    }
    stream_->submit_and_wait();
    slot->position = p;
    slot->age = ++clock_;
}

int StateSnapshots::newest_at_or_below(int n) const {
    int best = 0;
    for (const Slot& s : slots_)
        if (s.position <= n) best = std::max(best, s.position);
    return best;
}

void StateSnapshots::restore(int p, RecurrentState& state) {
    const auto it = std::find_if(slots_.begin(), slots_.end(), [p](const Slot& s) { return s.position == p; });
    if (it == slots_.end())
        throw std::logic_error("StateSnapshots::restore: no snapshot of position " + std::to_string(p));
    stream_->begin();
    uint64_t at = 0;
    for (const gpu::Buffer* b : state.state_buffers()) {
        stream_->copy(it->copy, at, *b, 0, b->size());
        at += b->size();
    }
    stream_->submit_and_wait();
    state.restored(p);
}

void StateSnapshots::drop_after(int n) {
    std::erase_if(slots_, [n](const Slot& s) { return s.position > n; });
}

}  // namespace vkllm::model
