// A search index over an i-quant grid (iq_grids.h) for the encoders: which lattice points are
// grid points, and for each lattice point that is not, the grid points nearest to it. Built once
// per grid on first use and kept (a few hundred KiB each); safe to use from several threads.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/iq_grids.h"

namespace vkllm::gguf {

class IqGridIndex {
public:
    // `rings`: how many of the smallest distinct lattice distances a point's neighbours span
    // (llama.cpp's choice per type: 1 for IQ2_S, 2 for IQ2_XXS/XS and IQ3_XXS, 3 for IQ3_S and IQ1).
    IqGridIndex(IqGridId id, int rings);

    const IqLattice& lattice() const { return lattice_; }

    // Code word of a point given each coordinate's level (levels[j] < lattice().levels).
    uint32_t code_of(const int* levels) const;
    // The grid index of code word `code`, or -1 when it is not a grid point.
    int grid_index(uint32_t code) const { return entry_[code] >= 0 ? entry_[code] : -1; }
    // The candidate grid points for an off-grid code word (empty for a grid point).
    std::span<const uint16_t> neighbours(uint32_t code) const;
    // Level of coordinate j of grid point i.
    int level(uint32_t i, int j) const { return (lattice_.codes[i] >> (lattice_.bits * j)) & ((1u << lattice_.bits) - 1); }
    // The coordinates of grid point i (dim values, as the decoder uses them).
    const float* coords(uint32_t i) const { return coords_.data() + size_t(i) * lattice_.dim; }

private:
    IqLattice lattice_;
    // Per code word: the grid index (>= 0), or -(1 + offset of its neighbour list in lists_),
    // whose first entry is the list's length.
    std::vector<int32_t> entry_;
    std::vector<uint16_t> lists_;
    std::vector<float> coords_;  // [points][dim]
};

// The shared index of each grid type (built on first call).
const IqGridIndex& iq_grid_index(TensorType t);

}  // namespace vkllm::gguf
