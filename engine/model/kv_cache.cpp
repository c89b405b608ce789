#include "model/kv_cache.h"

#include <algorithm>
#include <string>

#include "gpu/device.h"

namespace vkllm::model {

KvCacheType KvCache::choose_type(const gpu::Context& ctx, const ModelSpec& spec, KvCacheType asked) {
    if (asked == KvCacheType::F16 && !ctx.caps().storage_16bit)
        throw ModelError("an f16 KV cache needs 16-bit storage (storageBuffer16BitAccess), which device '" +
                         ctx.caps().name + "' lacks; use an f32 cache");
    // An encoder's one bidirectional pass keeps nothing for later tokens, so its "cache" stays
    // exact (as llama.cpp's embeddings).
    const bool encoder = std::any_of(spec.layers.begin(), spec.layers.end(), [](const LayerSpec& L) {
        return L.mixer == LayerMixer::Attention && !L.attn.causal;
    });
    const bool f16 = asked == KvCacheType::F16 || (asked == KvCacheType::Auto && ctx.caps().storage_16bit && !encoder);
    const KvCacheType type = asked == KvCacheType::Q8_0 ? KvCacheType::Q8_0
                             : f16                      ? KvCacheType::F16
                                                        : KvCacheType::F32;
    if (type == KvCacheType::Q8_0)
        for (size_t l = 0; l < spec.layers.size(); ++l) {
            if (spec.layers[l].mixer != LayerMixer::Attention) continue;
            const AttentionSpec& a = spec.layers[l].attn;
            for (int row : {a.n_head_kv * a.head_dim, a.n_head_kv * a.head_dim_v})
                if (row % 32)
                    throw ModelError("a q8_0 KV cache holds blocks of 32 values, but layer " + std::to_string(l) +
                                     " caches rows of " + std::to_string(row) + " values; use --cache-type f16 or f32");
        }
    return type;
}

KvCache::KvCache(gpu::Context& ctx, const ModelSpec& spec, int n_ctx, int n_batch, KvCacheType type)
    : type_(type) {
    const uint64_t range = ctx.caps().max_storage_buffer_range;
    for (const LayerSpec& L : spec.layers) {
        if (L.mixer != LayerMixer::Attention) {  // no keys or values (a state-space layer: RecurrentState)
            layers_.emplace_back();
            continue;
        }
        const uint64_t k_row = ops::cache_bytes(type, uint64_t(L.attn.n_head_kv) * uint64_t(L.attn.head_dim));
        const uint64_t v_row = ops::cache_bytes(type, uint64_t(L.attn.n_head_kv) * uint64_t(L.attn.head_dim_v));
        Layer c;
        c.window = L.attn.window;
        c.ring = L.attn.window > 0 && L.attn.window + n_batch - 1 < n_ctx;
        c.slots = c.ring ? L.attn.window + n_batch - 1 : n_ctx;
        if (uint64_t(c.slots) * std::max(k_row, v_row) > range)
            throw ModelError("a KV cache of " + std::to_string(c.slots) + " tokens exceeds the device's largest binding (" +
                             std::to_string(range >> 20) + " MiB per layer); use a smaller context (-c)");
        c.k = gpu::Buffer(ctx, uint64_t(c.slots) * k_row, gpu::Memory::Device);
        c.v = gpu::Buffer(ctx, uint64_t(c.slots) * v_row, gpu::Memory::Device);
        auto shared = std::find_if(slot_pos_.begin(), slot_pos_.end(),
                                   [&](const SlotPositions& p) { return p.slots == c.slots; });
        if (shared == slot_pos_.end()) {
            slot_pos_.push_back({c.slots, gpu::Buffer(ctx, uint64_t(c.slots) * 4, gpu::Memory::Host)});
            shared = slot_pos_.end() - 1;
        }
        c.positions = size_t(shared - slot_pos_.begin());
        layers_.push_back(std::move(c));
    }
    reset();
}

void KvCache::reset() {
    for (SlotPositions& p : slot_pos_) {
        auto* pos = static_cast<int32_t*>(p.buffer.mapped());
        for (int i = 0; i < p.slots; ++i) pos[i] = -1;
    }
}

void KvCache::begin_pass(int pos0, int n_tokens) {
    if (pos0 == 0) reset();
    // Every cache size records which position its slots now hold (written before the submit;
    // the previous pass has completed, so no GPU work reads these buffers now).
    for (SlotPositions& p : slot_pos_) {
        auto* slot_pos = static_cast<int32_t*>(p.buffer.mapped());
        for (int i = 0; i < n_tokens; ++i) slot_pos[(pos0 + i) % p.slots] = pos0 + i;
    }
}

// A slot is found by its position (slot = position % slots), and attention masks come from the
// position each slot holds, so forgetting positions >= n is marking their slots empty. A
// global cache keeps every position, so positions < n are intact. A sliding-window ring of
// `slots` slots only holds the newest `slots` positions evaluated: positions < n whose slots
// were reused by the dropped ones are gone. A later query at position q >= n reads keys in
// (q - window, q], so what must still be held is [n - window + 1, n).
bool KvCache::truncate(int n) {
    bool intact = true;
    for (size_t l = 0; l < layers_.size(); ++l) {
        const Layer& c = layers_[l];
        if (!c.ring) continue;
        const auto* slot_pos = static_cast<const int32_t*>(slot_pos_[c.positions].buffer.mapped());
        for (int p = std::max(0, n - c.window + 1); p < n; ++p)
            if (slot_pos[p % c.slots] != p) intact = false;
    }
    for (SlotPositions& p : slot_pos_) {
        auto* slot_pos = static_cast<int32_t*>(p.buffer.mapped());
        for (int i = 0; i < p.slots; ++i)
            if (slot_pos[i] >= n) slot_pos[i] = -1;
    }
    return intact;
}

uint64_t KvCache::bytes() const {
    const Usage u = usage();
    return u.global_bytes + u.local_bytes;
}

KvCache::Usage KvCache::usage() const {
    Usage u;
    for (const Layer& c : layers_) {
        if (c.slots == 0) continue;  // no attention in this layer
        (c.ring ? u.local_layers : u.global_layers) += 1;
        (c.ring ? u.local_bytes : u.global_bytes) += c.k.size() + c.v.size();
    }
    return u;
}

uint64_t KvCache::slot_positions_bytes() const {
    uint64_t n = 0;
    for (const SlotPositions& p : slot_pos_) n += p.buffer.size();
    return n;
}

}  // namespace vkllm::model
