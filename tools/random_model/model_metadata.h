// A model's metadata: general.*, the family's <arch>.* keys for the validated configuration (as
// llama.cpp's converter writes them), and the tokenizer.* keys of the vocabulary file.
#pragma once

#include "gguf/gguf.h"
#include "random_model/arch_tables.h"
#include "random_model/random_model.h"
#include "random_model/tensor_sizes.h"

namespace vkllm::random_model {

void add_metadata(gguf::Writer& w, const ArchTable& arch, const RandomModelConfig& c, const Sizes& sizes,
                  const gguf::File& vocab);

}  // namespace vkllm::random_model
