#include "gpu/error.h"

#include <filesystem>

namespace vkllm::gpu {

const char* result_name(VkResult r) {
    switch (r) {
#define CASE(x) case x: return #x;
        CASE(VK_SUCCESS) CASE(VK_NOT_READY) CASE(VK_TIMEOUT) CASE(VK_INCOMPLETE)
        CASE(VK_ERROR_OUT_OF_HOST_MEMORY) CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        CASE(VK_ERROR_INITIALIZATION_FAILED) CASE(VK_ERROR_DEVICE_LOST)
        CASE(VK_ERROR_MEMORY_MAP_FAILED) CASE(VK_ERROR_LAYER_NOT_PRESENT)
        CASE(VK_ERROR_EXTENSION_NOT_PRESENT) CASE(VK_ERROR_FEATURE_NOT_PRESENT)
        CASE(VK_ERROR_INCOMPATIBLE_DRIVER) CASE(VK_ERROR_TOO_MANY_OBJECTS)
        CASE(VK_ERROR_FORMAT_NOT_SUPPORTED) CASE(VK_ERROR_FRAGMENTED_POOL)
        CASE(VK_ERROR_OUT_OF_POOL_MEMORY) CASE(VK_ERROR_INVALID_SHADER_NV) CASE(VK_ERROR_UNKNOWN)
#undef CASE
        default: return "VkResult(unknown)";
    }
}

void throw_vk_error(VkResult r, const char* call, const char* file, int line) {
    using Kind = GpuError::Kind;
    Kind kind = Kind::Other;
    std::string hint;
    if (r == VK_ERROR_DEVICE_LOST) {
        kind = Kind::DeviceLost;
        hint = " (the GPU stopped responding or was reset; restart the program, and if it repeats "
               "try a smaller context or batch, or update the driver)";
    } else if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
        kind = Kind::OutOfMemory;
        hint = " (not enough memory: try a smaller model, a more compact quantisation or a shorter context)";
    } else if (r == VK_ERROR_INCOMPATIBLE_DRIVER) {
        hint = " (no Vulkan driver found: install mesa-vulkan-drivers or your GPU vendor's driver)";
    }
    std::string where = std::filesystem::path(file).filename().string() + ":" + std::to_string(line);
    throw GpuError(kind, r, std::string(call) + " failed: " + result_name(r) + hint + " [" + where + "]");
}

void throw_unsupported(const std::string& what) {
    throw GpuError(GpuError::Kind::Unsupported, VK_ERROR_FEATURE_NOT_PRESENT, what);
}

}  // namespace vkllm::gpu
