#include "gpu/shaders.h"

namespace vkllm::gpu {

const EmbeddedShader* find_shader(std::string_view name) {
    for (const EmbeddedShader* s = kEmbeddedShaders; s->name; ++s)
        if (name == s->name) return s;
    return nullptr;
}

}  // namespace vkllm::gpu
