// The codebooks of llama.cpp's i-quant types. IQ2_XXS/XS/S, IQ3_XXS/S and IQ1_S/M store, per
// group of 4 or 8 weights, the index of one point of a fixed lattice codebook (a "grid"); the
// block's scales (and, for IQ2/IQ3, separate sign bits) turn the point into weights.
// The values are llama.cpp's (ggml-common.h). The GPU kernels read these same tables, uploaded
// once per device as storage buffers (shaders/include/dequant_iq_grid.glsl).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace vkllm::gguf {

enum class IqGridId { IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S };  // IQ1_M uses IQ1_S's grid

inline constexpr IqGridId kIqGridIds[] = {IqGridId::IQ2_XXS, IqGridId::IQ2_XS, IqGridId::IQ2_S,
                                          IqGridId::IQ3_XXS, IqGridId::IQ3_S,  IqGridId::IQ1_S};

// A codebook of `points` points with `dim` coordinates each: coordinate j of point i is
// values[i * dim + j]. IQ2/IQ3 coordinates are magnitudes (1..62), IQ1's are -1, 0 or +1.
struct IqGrid {
    const char* name;  // llama.cpp's name for the table, e.g. "iq2xxs_grid"
    uint32_t points;
    uint32_t dim;  // 4 or 8
    const int8_t* values;

    const int8_t* point(uint32_t i) const { return values + std::size_t(i) * dim; }
};

const IqGrid& iq_grid(IqGridId id);

// The lattice under a grid, for the encoders: every coordinate of every point is one of a few
// values (`levels` of them, ascending in `values`), and point i is the code word codes[i], whose
// bits [bits*j, bits*j + bits) hold the level of coordinate j.
struct IqLattice {
    uint32_t dim;
    uint32_t bits;    // per coordinate: 2 or 3
    uint32_t levels;  // 3 or 8
    const int8_t* values;
    const uint16_t* codes;
    uint32_t points;
};

IqLattice iq_lattice(IqGridId id);

// IQ4_NL and IQ4_XS: the 16 values a 4-bit code stands for (llama.cpp's kvalues_iq4nl), ascending.
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// IQ2_XXS, IQ2_XS and IQ3_XXS store the signs of 8 weights in 7 bits: the eighth sign is the one
// that makes the number of minus signs even. Bit j of the result set: weight j is negative.
constexpr uint8_t iq_signs_from_7_bits(uint32_t s7) {
    s7 &= 0x7f;
    return uint8_t(s7 | uint32_t(std::popcount(s7) & 1) << 7);
}

}  // namespace vkllm::gguf
