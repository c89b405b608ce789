// GPU buffers: device-local storage for weights and activations, host-visible for staging.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>

namespace vkllm::gpu {

class Context;

enum class Memory {
    Device,    // device-local; filled through staging copies
    Host,      // host-visible and coherent, mapped: staging and readback
};

class Buffer {
public:
    Buffer() = default;
    Buffer(Context& ctx, uint64_t bytes, Memory memory);
    ~Buffer();
    Buffer(Buffer&& other) noexcept;
    Buffer& operator=(Buffer&& other) noexcept;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    VkBuffer handle() const { return buffer_; }
    uint64_t size() const { return size_; }
    bool valid() const { return buffer_ != VK_NULL_HANDLE; }
    void* mapped() const { return mapped_; }  // Host memory only

    // Copy host data in or out (through a staging buffer for Device memory). Blocking.
    void upload(const void* src, uint64_t bytes, uint64_t offset = 0);
    void download(void* dst, uint64_t bytes, uint64_t offset = 0) const;
    void fill_zero();

private:
    void release();
    Context* ctx_ = nullptr;
    VkBuffer buffer_ = VK_NULL_HANDLE;
    VkDeviceMemory memory_ = VK_NULL_HANDLE;
    uint64_t size_ = 0;
    void* mapped_ = nullptr;
};

// A bound window of a buffer: what one shader binding sees.
struct BufferRange {
    const Buffer* buffer = nullptr;
    uint64_t offset = 0;
    uint64_t size = VK_WHOLE_SIZE;

    BufferRange() = default;
    BufferRange(const Buffer& b) : buffer(&b) {}  // NOLINT: whole buffer
    BufferRange(const Buffer& b, uint64_t off, uint64_t sz) : buffer(&b), offset(off), size(sz) {}
};

}  // namespace vkllm::gpu
