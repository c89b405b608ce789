// The GGUF model compiled into the vkllm binary (cmake/EmbedModel.cmake, VKLLM_DEFAULT_MODEL):
// what the commands use when they are given no -m.
#pragma once

#include <cstdint>
#include <span>

namespace vkllm::cli {

// The model file's bytes. They are static data of the program: valid for its whole life.
std::span<const uint8_t> embedded_model();
// The model file's name without its extension, e.g. "zoo-dense".
const char* embedded_model_name();

}  // namespace vkllm::cli
