#include "gpu/shaders.h"

#include <string>
#include <unordered_map>

#include "gpu/device.h"

namespace vkllm::gpu {

std::optional<ShaderId> find_shader_id(std::string_view name) {
    static const std::unordered_map<std::string_view, ShaderId> by_name = [] {
        std::unordered_map<std::string_view, ShaderId> m;
        for (size_t i = 0; i < kShaderCount; ++i) m.emplace(kShaderInfo[i].name, static_cast<ShaderId>(i));
        return m;
    }();
    const auto it = by_name.find(name);
    if (it == by_name.end()) return std::nullopt;
    return it->second;
}

const EmbeddedShader* find_shader(std::string_view name) {
    const std::optional<ShaderId> id = find_shader_id(name);
    return id ? &embedded_shader(*id) : nullptr;
}

// Context::pipeline by identifier (declared in gpu/device.h, which does not include the generated
// header): the pipeline of the variant's name, so cache keys are the names as before.
const Pipeline& Context::pipeline(ShaderId shader, uint32_t n_buffers, uint32_t push_bytes,
                                  const std::vector<uint32_t>& spec_constants) {
    return pipeline(std::string(shader_name(shader)), n_buffers, push_bytes, spec_constants);
}

}  // namespace vkllm::gpu
