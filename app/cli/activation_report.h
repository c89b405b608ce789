// The residual-stream report of `vkllm run --activations`: per layer, the largest magnitude, where
// it sits (token, channel) and how far above the median it is, with massive activations flagged.
#pragma once

#include <cstdint>
#include <cstdio>
#include <vector>

#include "vkllm/model.h"
#include "vkllm/probe.h"

namespace vkllm::cli {

// Sun et al. 2024 ("Massive activations in large language models"): a residual-stream value is
// massive when its magnitude exceeds 100 and is about 1000x the median magnitude of the hidden state.
constexpr float kMassiveAbs = 100.0f;
constexpr float kMassiveRatio = 1000.0f;

bool is_massive(const ResidualStat& s);

// `tokens` are the ids of the pass the stats come from (positions first_pos, first_pos + 1, ...).
void print_activation_report(std::FILE* out, const std::vector<ResidualStat>& stats, const std::vector<int32_t>& tokens,
                             int first_pos, const Model& model);

}  // namespace vkllm::cli
