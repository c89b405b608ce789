// The i-quant and ternary block encoders (one 256- or 32-element block each; see BlockEncoder in
// quant_blocks.h), by family. Internal to engine/gguf.
#pragma once

#include <cstdint>

namespace vkllm::gguf {

// quant_iq4_encode.cpp: non-linear 4-bit codes with a searched scale.
void encode_iq4_nl(const float* x, const float* importance, uint8_t* out);
void encode_iq4_xs(const float* x, const float* importance, uint8_t* out);

// quant_iq_grid_encode.cpp: grid points with sign bits (quant_grid_index.h finds the points).
void encode_iq2_xxs(const float* x, const float* importance, uint8_t* out);
void encode_iq2_xs(const float* x, const float* importance, uint8_t* out);
void encode_iq2_s(const float* x, const float* importance, uint8_t* out);
void encode_iq3_xxs(const float* x, const float* importance, uint8_t* out);
void encode_iq3_s(const float* x, const float* importance, uint8_t* out);

// quant_iq1_encode.cpp: ternary grid points shifted by +-1/8.
void encode_iq1_s(const float* x, const float* importance, uint8_t* out);
void encode_iq1_m(const float* x, const float* importance, uint8_t* out);

// quant_tq_encode.cpp: ternary {-1, 0, +1} times one scale.
void encode_tq1_0(const float* x, const float* importance, uint8_t* out);
void encode_tq2_0(const float* x, const float* importance, uint8_t* out);

}  // namespace vkllm::gguf
