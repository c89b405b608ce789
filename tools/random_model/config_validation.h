// The checks of a RandomModelConfig against its family's table, which fill in the family's
// defaults, and what the rest of the generator asks of a checked configuration.
#pragma once

#include <string>

#include "random_model/arch_tables.h"
#include "random_model/random_model.h"

namespace vkllm::random_model {

// Throws ConfigError(message) unless ok.
void require(bool ok, const std::string& message);

// Checks the configuration against the family; returns it with defaults filled in. Throws
// ConfigError naming the option and why.
RandomModelConfig validated(RandomModelConfig c, const ArchTable& arch);

// The attention period of a Gated DeltaNet pattern: the first attention layer's position (1-based).
int full_attention_interval(const std::string& layers);

// Whether layer `layer` (-1: a global tensor) has experts: none among deepseek2's leading dense
// layers, and with an interleave step S (llama4) only layers with (layer + 1) % S == 0.
bool is_moe_layer(const RandomModelConfig& c, int layer);

}  // namespace vkllm::random_model
