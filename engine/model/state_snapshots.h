// Copies of a session's recurrent state taken on the GPU at the positions a later truncate will
// want, so that going back does not re-read the whole context. A recurrent layer's state (a
// Mamba scan's, a short convolution's, RWKV-7's) folds every position it has seen into one value
// and cannot forget positions: without a copy, truncate(n) below the newest position re-evaluates
// every kept token from position 0. With one taken at position p <= n, the session copies it
// back (restore) and re-evaluates only the tokens p..n.
//
// A snapshot is every buffer of RecurrentState::state_buffers() packed into one buffer, copied
// by vkCmdCopyBuffer (no host round trip). The snapshots form a small ring bounded by a count
// and by bytes, whichever bound is smaller: when it is full the oldest is replaced. A snapshot
// stays valid while the tokens before its position stay the session's: drop_after(n) forgets
// those after a truncate to n.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "gpu/buffer.h"

namespace vkllm::gpu {
class Context;
class Stream;
}  // namespace vkllm::gpu

namespace vkllm::model {

class RecurrentState;

class StateSnapshots {
public:
    static constexpr int kMaxCount = 4;
    static constexpr uint64_t kMaxBytes = uint64_t(64) << 20;

    StateSnapshots();  // none: a model without recurrent layers
    // Slots for copies of `state` (empty state: none), at most max_count of them and no more
    // than max_bytes in all (capacity() 0 when the state alone is larger).
    StateSnapshots(gpu::Context& ctx, const RecurrentState& state, int max_count = kMaxCount,
                   uint64_t max_bytes = kMaxBytes);
    ~StateSnapshots();
    StateSnapshots(StateSnapshots&&) noexcept;
    StateSnapshots& operator=(StateSnapshots&&) noexcept;

    int capacity() const { return capacity_; }
    int count() const { return int(slots_.size()); }
    // Bytes of the snapshot buffers allocated so far (they are made as the ring fills).
    uint64_t bytes() const;

    // Copies the state as it is now, after state.positions() positions, into a free slot or the
    // oldest one. Nothing when a copy of that position is already held, the state holds no
    // positions (or is stale), or capacity() is 0.
    void take(const RecurrentState& state);
    // The newest position p <= n held (0: none).
    int newest_at_or_below(int n) const;
    // Copies the snapshot of position p back into the state and tells it (restored(p)).
    // std::logic_error when p is not held.
    void restore(int p, RecurrentState& state);
    // Forgets the snapshots of positions after n (the tokens before them changed or went).
    void drop_after(int n);
    void clear() { slots_.clear(); }

private:
    struct Slot {
        int position = 0;
        uint64_t age = 0;  // when it was taken: the smallest is replaced first
        gpu::Buffer copy;
    };
    gpu::Context* ctx_ = nullptr;
    std::unique_ptr<gpu::Stream> stream_;
    uint64_t state_bytes_ = 0;
    int capacity_ = 0;
    uint64_t clock_ = 0;
    std::vector<Slot> slots_;
};

}  // namespace vkllm::model
