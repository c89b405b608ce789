// RoPE scaling's tensors, computed as convert_hf_to_gguf.py computes them (not random, so they
// look like a trained model's). parse_rope_scaling and longrope_attn_factor are in random_model.h.
#pragma once

#include <cstdint>
#include <vector>

#include "random_model/random_model.h"

namespace vkllm::random_model {

// Llama 3 RoPE scaling as a per-frequency divisor of theta (llama.cpp's rope_freqs tensor):
// high frequencies (wavelength < orig_ctx / high_freq_factor) keep theta, low ones (wavelength >
// orig_ctx / low_freq_factor) are divided by `factor`, and the band between interpolates smoothly.
std::vector<float> llama3_rope_freq_factors(const RopeScalingConfig& r, float freq_base, uint64_t rope_dims);

// LongRoPE divisors (1 for the highest frequency, growing towards the lowest), n of them. Long:
// geometric from 1 to n_ctx / original context (at least 2). Short: linear from 1 to 1.1.
std::vector<float> longrope_factors(bool long_factors, int n_ctx, int original_context, uint64_t n);

}  // namespace vkllm::random_model
