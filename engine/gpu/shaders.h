// SPIR-V of every shader variant, embedded at build time (cmake/Shaders.cmake).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace vkllm::gpu {

struct EmbeddedShader {
    const char* name;      // variant name from shaders/variants.cmake
    const uint32_t* code;  // SPIR-V words
    size_t size;           // bytes
};

// Terminated by an entry whose name is nullptr.
extern const EmbeddedShader kEmbeddedShaders[];

// nullptr if no variant has that name.
const EmbeddedShader* find_shader(std::string_view name);

}  // namespace vkllm::gpu
