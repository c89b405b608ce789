// Grouped blocks (ops.h): Q4_0, Q8_0 and Q6_K rows rearranged on upload so that the shaders load
// each block's quants with 16-byte loads. A group of 8 blocks [d0 q0][d1 q1]...[d7 q7] (each d
// an f16 scale, each q the block's other bytes: 16 or 32 bytes of quants after d; Q6_K's 208
// bytes of quants and scales before it) is stored as [d0 d1 ... d7][q0 q1 ... q7]: 16 bytes of
// scales, then the payloads on 16-byte boundaries. Rows keep their size and place.
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#include "gguf/quant.h"
#include "gpu/device.h"
#include "ops/ops.h"

namespace vkllm::ops {

namespace {

constexpr int64_t kGroup = 8;        // blocks per group
constexpr uint64_t kScaleBytes = 2;  // the f16 d of each block

// The groupable types: the block's bytes, its elements and where its f16 scale sits in it.
struct Groupable {
    uint64_t block_bytes = 0, block_elems = 0, scale_at = 0;
};
bool groupable(TensorType t, Groupable* g) {
    switch (t) {
        case TensorType::Q4_0: *g = {18, 32, 0}; return true;
        case TensorType::Q8_0: *g = {34, 32, 0}; return true;
        case TensorType::Q6_K: *g = {210, 256, 208}; return true;  // ql, qh, scales, then d
        default: return false;
    }
}

Groupable checked(TensorType t, int64_t n_in, const char* what) {
    Groupable g;
    if (!can_group_blocks(t, n_in))
        throw std::invalid_argument(std::string(what) +
                                    ": grouped blocks are for Q4_0 and Q8_0 rows of a multiple of 256 elements and "
                                    "Q6_K rows of a multiple of 2048, not " +
                                    gguf::type_traits(t)->name + " rows of " + std::to_string(n_in));
    groupable(t, &g);
    return g;
}

// Block j of a group: from the file's order into grouped order (its scale into the group's 16
// bytes of scales, its other bytes in order into its payload), and back.
void block_to_group(const Groupable& g, const uint8_t* block, uint8_t* group, int64_t j) {
    uint8_t* payload = group + kScaleBytes * kGroup + (g.block_bytes - kScaleBytes) * uint64_t(j);
    std::memcpy(group + kScaleBytes * uint64_t(j), block + g.scale_at, kScaleBytes);
    std::memcpy(payload, block, g.scale_at);
    std::memcpy(payload + g.scale_at, block + g.scale_at + kScaleBytes, g.block_bytes - g.scale_at - kScaleBytes);
}
void group_to_block(const Groupable& g, const uint8_t* group, uint8_t* block, int64_t j) {
    const uint8_t* payload = group + kScaleBytes * kGroup + (g.block_bytes - kScaleBytes) * uint64_t(j);
    std::memcpy(block + g.scale_at, group + kScaleBytes * uint64_t(j), kScaleBytes);
    std::memcpy(block, payload, g.scale_at);
    std::memcpy(block + g.scale_at + kScaleBytes, payload + g.scale_at, g.block_bytes - g.scale_at - kScaleBytes);
}

void regroup(TensorType t, int64_t n_in, int64_t n_rows, const uint8_t* src, uint8_t* dst, bool to_grouped,
             const char* what) {
    const Groupable g = checked(t, n_in, what);
    const uint64_t groups = uint64_t(n_rows) * uint64_t(n_in) / g.block_elems / kGroup, bytes = kGroup * g.block_bytes;
    for (uint64_t i = 0; i < groups; ++i)
        for (int64_t j = 0; j < kGroup; ++j) {
            const uint64_t block = i * bytes + uint64_t(j) * g.block_bytes;
            if (to_grouped) block_to_group(g, src + block, dst + i * bytes, j);
            else group_to_block(g, src + i * bytes, dst + block, j);
        }
}

}  // namespace

bool can_group_blocks(TensorType t, int64_t n_in) {
    Groupable g;
    return groupable(t, &g) && n_in > 0 && n_in % int64_t(g.block_elems * kGroup) == 0;
}

void group_blocks(TensorType t, int64_t n_in, int64_t n_rows, const uint8_t* src, uint8_t* dst) {
    regroup(t, n_in, n_rows, src, dst, true, "group_blocks");
}

void ungroup_blocks(TensorType t, int64_t n_in, int64_t n_rows, const uint8_t* src, uint8_t* dst) {
    regroup(t, n_in, n_rows, src, dst, false, "ungroup_blocks");
}

GroupedBlockPlace grouped_block_place(TensorType t, int64_t ib) {
    Groupable g;
    if (!groupable(t, &g))
        throw std::invalid_argument(std::string("grouped_block_place: ") + gguf::type_traits(t)->name +
                                    " has no grouped blocks");
    const uint64_t group = uint64_t(ib / kGroup) * kGroup * g.block_bytes, j = uint64_t(ib % kGroup);
    return {group + kScaleBytes * j, group + kScaleBytes * kGroup + (g.block_bytes - kScaleBytes) * j, g.scale_at};
}

bool group_blocks_on_upload(const DeviceCapabilities& caps) {
    const char* v = std::getenv("VKLLM_GROUPED_BLOCKS");
    if (!v || !*v) return caps.type != "cpu";
    if (std::string_view(v) == "1") return true;
    if (std::string_view(v) == "0") return false;
    throw std::invalid_argument(std::string("VKLLM_GROUPED_BLOCKS=") + v + " is not 0 or 1");
}

}  // namespace vkllm::ops
