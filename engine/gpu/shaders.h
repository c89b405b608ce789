// SPIR-V of every shader variant, embedded at build time (cmake/Shaders.cmake), and the variants'
// identifiers: gpu::ShaderId::<variant> from the generated gpu/shader_ids.h, one per line of
// shaders/variants.cmake. The engine names variants by identifier; names are for logs, pipeline
// cache keys and the string lookups of tests and tools.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "gpu/shader_ids.h"

namespace vkllm::gpu {

struct EmbeddedShader {
    const char* name;      // variant name from shaders/variants.cmake
    const uint32_t* code;  // SPIR-V words
    size_t size;           // bytes
};

// Indexed by ShaderId (generated shader_registry.cpp).
extern const EmbeddedShader kEmbeddedShaders[kShaderCount];

constexpr const char* shader_name(ShaderId id) { return kShaderInfo[static_cast<size_t>(id)].name; }
// The source file a variant is compiled from; the variants of one source share its push constants.
constexpr ShaderSource shader_source(ShaderId id) { return kShaderInfo[static_cast<size_t>(id)].source; }
// "matvec.comp"
constexpr const char* source_file(ShaderSource s) { return kShaderSourceFiles[static_cast<size_t>(s)]; }

// A variant without and with subgroup arithmetic (its _sg twin): pick(caps.subgroup_arithmetic).
struct SubgroupPair {
    ShaderId plain{}, sg{};
    constexpr ShaderId pick(bool subgroup_arithmetic) const { return subgroup_arithmetic ? sg : plain; }
};

inline const EmbeddedShader& embedded_shader(ShaderId id) { return kEmbeddedShaders[static_cast<size_t>(id)]; }

// The variant with that name (a hash lookup), or nullopt.
std::optional<ShaderId> find_shader_id(std::string_view name);
// nullptr if no variant has that name.
const EmbeddedShader* find_shader(std::string_view name);

}  // namespace vkllm::gpu
