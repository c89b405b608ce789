// Grouped blocks (ops.h): Q4_0 and Q8_0 rows rearranged on upload so that the shaders load each
// block's quants with one 16-byte load. A group of 8 blocks [d0 q0][d1 q1]...[d7 q7] (each d an
// f16 scale, each q the block's 16 or 32 bytes of quants) is stored as [d0 d1 ... d7][q0 q1 ... q7]:
// 16 bytes of scales, then the payloads on 16-byte boundaries. Rows keep their size and place.
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

constexpr int64_t kGroup = 8;       // blocks per group
constexpr uint64_t kScaleBytes = 2;  // the f16 d at the start of each block

uint64_t block_bytes(TensorType t) { return gguf::type_traits(t)->type_size; }

void check(TensorType t, int64_t n_in, const char* what) {
    if (!can_group_blocks(t, n_in))
        throw std::invalid_argument(std::string(what) + ": grouped blocks are for Q4_0 and Q8_0 rows of a multiple of " +
                                    std::to_string(32 * kGroup) + " elements, not " +
                                    gguf::type_traits(t)->name + " rows of " + std::to_string(n_in));
}

}  // namespace

bool can_group_blocks(TensorType t, int64_t n_in) {
    return (t == TensorType::Q4_0 || t == TensorType::Q8_0) && n_in > 0 && n_in % (32 * kGroup) == 0;
}

void group_blocks(TensorType t, int64_t n_in, int64_t n_rows, const uint8_t* src, uint8_t* dst) {
    check(t, n_in, "group_blocks");
    const uint64_t bb = block_bytes(t), payload = bb - kScaleBytes, groups = uint64_t(n_rows) * uint64_t(n_in / 32 / kGroup);
    for (uint64_t g = 0; g < groups; ++g) {
        const uint8_t* in = src + g * kGroup * bb;
        uint8_t* out = dst + g * kGroup * bb;
        for (int64_t j = 0; j < kGroup; ++j) {
            std::memcpy(out + kScaleBytes * j, in + bb * j, kScaleBytes);
            std::memcpy(out + kScaleBytes * kGroup + payload * j, in + bb * j + kScaleBytes, payload);
        }
    }
}

void ungroup_blocks(TensorType t, int64_t n_in, int64_t n_rows, const uint8_t* src, uint8_t* dst) {
    check(t, n_in, "ungroup_blocks");
    const uint64_t bb = block_bytes(t), payload = bb - kScaleBytes, groups = uint64_t(n_rows) * uint64_t(n_in / 32 / kGroup);
    for (uint64_t g = 0; g < groups; ++g) {
        const uint8_t* in = src + g * kGroup * bb;
        uint8_t* out = dst + g * kGroup * bb;
        for (int64_t j = 0; j < kGroup; ++j) {
            std::memcpy(out + bb * j, in + kScaleBytes * j, kScaleBytes);
            std::memcpy(out + bb * j + kScaleBytes, in + kScaleBytes * kGroup + payload * j, payload);
        }
    }
}

GroupedBlockPlace grouped_block_place(TensorType t, int64_t ib) {
    if (t != TensorType::Q4_0 && t != TensorType::Q8_0)
        throw std::invalid_argument(std::string("grouped_block_place: ") + gguf::type_traits(t)->name +
                                    " has no grouped blocks");
    const uint64_t bb = block_bytes(t), group = uint64_t(ib / kGroup) * kGroup * bb, j = uint64_t(ib % kGroup);
    return {group + kScaleBytes * j, group + kScaleBytes * kGroup + (bb - kScaleBytes) * j};
}

bool group_blocks_on_upload(const DeviceCapabilities& caps) {
    const char* v = std::getenv("VKLLM_GROUPED_BLOCKS");
    if (!v || !*v) return caps.type != "cpu";
    if (std::string_view(v) == "1") return true;
    if (std::string_view(v) == "0") return false;
    throw std::invalid_argument(std::string("VKLLM_GROUPED_BLOCKS=") + v + " is not 0 or 1");
}

}  // namespace vkllm::ops
