#include "embedded_model.h"

// Defined by the assembler in the source cmake/EmbedModel.cmake generates.
extern "C" const uint8_t vkllm_embedded_model_data[];
extern "C" const uint64_t vkllm_embedded_model_size;
extern "C" const char vkllm_embedded_model_name[];

namespace vkllm::cli {

std::span<const uint8_t> embedded_model() {
    return {vkllm_embedded_model_data, static_cast<size_t>(vkllm_embedded_model_size)};
}

const char* embedded_model_name() { return vkllm_embedded_model_name; }

}  // namespace vkllm::cli
