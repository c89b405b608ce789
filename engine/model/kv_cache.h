// The attention layers' key/value caches of one session: per layer a K and a V buffer of
// `slots` rows in one storage type, and which position each slot holds.
//
// What a session remembers of its earlier tokens answers four calls, made by Forward:
//   begin_pass(pos0, n)  before a pass over positions pos0..pos0+n is submitted: the host-visible
//                        bookkeeping of where those positions go (pos0 == 0 starts over);
//   reset()              forget everything (a new sequence);
//   truncate(n)          forget positions >= n; false when what positions < n need is gone, so
//                        the caller must re-evaluate from position 0;
//   bytes() / usage()    memory accounting.
// A per-layer recurrent state (state-space or linear-attention layers: a fixed-size state each
// step reads and overwrites) is a sibling of this type answering the same calls with its own
// truncate rule: it folds every position it has seen into one state, so it cannot forget the
// positions >= n; truncate(n) holds only for n at its newest position, or when a snapshot taken
// at n is restored, and otherwise returns false (re-evaluate), as a sliding-window ring does
// once its slots were reused.
#pragma once

#include <cstdint>
#include <vector>

#include "gpu/buffer.h"
#include "model/spec.h"
#include "ops/ops.h"
#include "vkllm/kv_cache_type.h"

namespace vkllm::gpu { class Context; }

namespace vkllm::model {

class KvCache {
public:
    // A layer's cache. Global layers keep every position (slot = position); sliding-window
    // layers keep a ring of window + n_batch - 1 slots (slot = position % slots), enough for a
    // batch's earliest query to still see its whole window.
    struct Layer {
        int slots = 0;
        bool ring = false;
        int window = 0;       // the layer's attention window (0: none)
        gpu::Buffer k;        // [slots, n_head_kv * head_dim] of the cache type
        gpu::Buffer v;        // [slots, n_head_kv * head_dim_v] of the cache type
        size_t positions = 0;  // index of its slot positions (shared by layers of the same slots)
    };
    // KV-cache bytes of global layers and of sliding-window (ring-buffer) layers.
    struct Usage {
        int global_layers = 0, local_layers = 0;
        uint64_t global_bytes = 0, local_bytes = 0;
    };

    // The storage type of every layer's k and v. Auto: F16 for decoders where the device can
    // store it. Throws ModelError for a type the device or the spec's row widths cannot hold.
    static KvCacheType choose_type(const gpu::Context& ctx, const ModelSpec& spec, KvCacheType asked);

    KvCache() = default;  // no layers
    // One cache per layer of spec for n_ctx positions and passes of at most n_batch tokens.
    // Throws ModelError when a layer's cache exceeds the device's largest binding.
    KvCache(gpu::Context& ctx, const ModelSpec& spec, int n_ctx, int n_batch, KvCacheType type);

    void begin_pass(int pos0, int n_tokens);
    void reset();
    // Forgets positions >= n (kv_cache.cpp says why a ring may lose positions < n).
    bool truncate(int n);
    uint64_t bytes() const;
    Usage usage() const;
    // The host-visible slot positions (counted with the scratch, not the caches).
    uint64_t slot_positions_bytes() const;

    KvCacheType type() const { return type_; }
    const Layer& layer(int l) const { return layers_[size_t(l)]; }
    // int32 [slots]: the position each slot of layer l holds (-1 empty). Host-visible: written
    // by begin_pass before each submit, read by attention's mask.
    const gpu::Buffer& slot_positions(int l) const { return slot_pos_[layers_[size_t(l)].positions].buffer; }

private:
    struct SlotPositions {
        int slots = 0;
        gpu::Buffer buffer;
    };
    std::vector<Layer> layers_;
    std::vector<SlotPositions> slot_pos_;  // one per distinct slot count
    KvCacheType type_ = KvCacheType::F32;
};

}  // namespace vkllm::model
