// Vulkan errors as exceptions that name the call and the VkResult.
#pragma once

#include <vulkan/vulkan.h>

#include <stdexcept>
#include <string>

namespace vkllm::gpu {

class GpuError : public std::runtime_error {
public:
    enum class Kind { DeviceLost, OutOfMemory, Unsupported, Other };
    GpuError(Kind kind, VkResult result, const std::string& message)
        : std::runtime_error(message), kind_(kind), result_(result) {}
    Kind kind() const { return kind_; }
    VkResult result() const { return result_; }

private:
    Kind kind_;
    VkResult result_;
};

const char* result_name(VkResult r);
// Throws GpuError for a failed VkResult; `call` is the source text of the call.
[[noreturn]] void throw_vk_error(VkResult r, const char* call, const char* file, int line);
[[noreturn]] void throw_unsupported(const std::string& what);

}  // namespace vkllm::gpu

#define VK_CHECK(call)                                                                  \
    do {                                                                                \
        VkResult vk_check_result_ = (call);                                             \
        if (vk_check_result_ != VK_SUCCESS)                                             \
            ::vkllm::gpu::throw_vk_error(vk_check_result_, #call, __FILE__, __LINE__);  \
    } while (0)
