// The tensors of a model: each rule of the family's table present in each layer, its values
// drawn from its own seeded stream (or computed), planted, and encoded in its storage type.
#pragma once

#include "gguf/gguf.h"
#include "random_model/arch_tables.h"
#include "random_model/plant.h"
#include "random_model/random_model.h"
#include "random_model/tensor_sizes.h"

namespace vkllm::random_model {

// Adds the tensors of `arch` for the validated configuration `c` to `w`, globals first, then
// layer by layer in the table's order; `plant` (may be null) changes the tensors it touches.
// Tensors are made on up to `threads` threads (0: one per core); the file does not depend on it.
void add_tensors(gguf::Writer& w, const ArchTable& arch, const RandomModelConfig& c, const Sizes& sizes,
                 const PlantContext* plant, int threads);

}  // namespace vkllm::random_model
