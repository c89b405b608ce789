// The encoders' grid search index (see quant_grid_index.h). Distances are measured in lattice
// steps (levels), as llama.cpp's iq2xs_init_impl / iq3xs_init_impl do: for a point off the grid,
// the neighbours are every grid point whose squared distance is among the `rings` smallest.
#include "gguf/quant_grid_index.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "gguf/gguf.h"

namespace vkllm::gguf {

IqGridIndex::IqGridIndex(IqGridId id, int rings) : lattice_(iq_lattice(id)) {
    const uint32_t size = 1u << (lattice_.bits * lattice_.dim);
    entry_.assign(size, 0);
    std::vector<bool> on_grid(size, false);
    for (uint32_t i = 0; i < lattice_.points; ++i) {
        entry_[lattice_.codes[i]] = int32_t(i);
        on_grid[lattice_.codes[i]] = true;
    }
    coords_.resize(size_t(lattice_.points) * lattice_.dim);
    for (uint32_t i = 0; i < lattice_.points; ++i)
        for (uint32_t j = 0; j < lattice_.dim; ++j) coords_[size_t(i) * lattice_.dim + j] = float(lattice_.values[level(i, int(j))]);
    std::vector<std::pair<int, uint16_t>> by_distance(lattice_.points);
    const uint32_t mask = (1u << lattice_.bits) - 1;
    for (uint32_t code = 0; code < size; ++code) {
        if (on_grid[code]) continue;
        bool valid = true;  // only code words whose every level exists are ever looked up
        for (uint32_t j = 0; j < lattice_.dim; ++j) valid = valid && ((code >> (lattice_.bits * j)) & mask) < lattice_.levels;
        if (!valid) {
            entry_[code] = -1 - int32_t(lists_.size());
            lists_.push_back(0);
            continue;
        }
        for (uint32_t i = 0; i < lattice_.points; ++i) {
            int d2 = 0;
            for (uint32_t j = 0; j < lattice_.dim; ++j) {
                const int diff = int((code >> (lattice_.bits * j)) & mask) - level(i, int(j));
                d2 += diff * diff;
            }
            by_distance[i] = {d2, uint16_t(i)};
        }
        std::sort(by_distance.begin(), by_distance.end());
        entry_[code] = -1 - int32_t(lists_.size());
        const size_t head = lists_.size();
        lists_.push_back(0);
        int distinct = 0, last = -1;
        for (const auto& [d2, i] : by_distance) {
            if (d2 != last) {
                if (++distinct > rings) break;
                last = d2;
            }
            lists_.push_back(i);
        }
        lists_[head] = uint16_t(lists_.size() - head - 1);
    }
}

uint32_t IqGridIndex::code_of(const int* levels) const {
    uint32_t code = 0;
    for (uint32_t j = 0; j < lattice_.dim; ++j) code |= uint32_t(levels[j]) << (lattice_.bits * j);
    return code;
}

std::span<const uint16_t> IqGridIndex::neighbours(uint32_t code) const {
    if (entry_[code] >= 0) return {};
    const size_t head = size_t(-1 - entry_[code]);
    return {lists_.data() + head + 1, lists_[head]};
}

const IqGridIndex& iq_grid_index(TensorType t) {
    // Function-local statics: each index is built by the first thread that needs it.
    switch (t) {
        case TensorType::IQ2_XXS: { static const IqGridIndex index(IqGridId::IQ2_XXS, 2); return index; }
        case TensorType::IQ2_XS: { static const IqGridIndex index(IqGridId::IQ2_XS, 2); return index; }
        case TensorType::IQ2_S: { static const IqGridIndex index(IqGridId::IQ2_S, 1); return index; }
        case TensorType::IQ3_XXS: { static const IqGridIndex index(IqGridId::IQ3_XXS, 2); return index; }
        case TensorType::IQ3_S: { static const IqGridIndex index(IqGridId::IQ3_S, 3); return index; }
        case TensorType::IQ1_S:
        case TensorType::IQ1_M: { static const IqGridIndex index(IqGridId::IQ1_S, 3); return index; }
        default: throw std::invalid_argument("iq_grid_index: type " + std::to_string(uint32_t(t)) + " has no grid");
    }
}

}  // namespace vkllm::gguf
