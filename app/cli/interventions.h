// The intervention options of vkllm run: --zero-weight and --set-activation.
#pragma once

#include <string>
#include <vector>

#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm::cli {

// "LAYER:TENSOR:ROW:COL[:EXPERT]", several separated by commas: weight[ROW, COL] of
// blk.LAYER.TENSOR (PyTorch's order: ROW the output channel). Throws UsageError.
std::vector<WeightRef> parse_zero_weights(const std::string& text);

// "LAYER:CHANNEL=VALUE" or "LAYER:CHANNEL=mean", several separated by commas: the residual
// stream's CHANNEL after LAYER (-1: after the embeddings) set to VALUE, or to its running mean.
// Throws UsageError.
std::vector<ResidualEdit> parse_set_activations(const std::string& text);

}  // namespace vkllm::cli
