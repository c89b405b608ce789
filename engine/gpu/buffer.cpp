#include "gpu/buffer.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "gpu/device.h"
#include "gpu/error.h"

namespace vkllm::gpu {

Buffer::Buffer(Context& ctx, uint64_t bytes, Memory memory) : ctx_(&ctx), size_(bytes) {
    if (bytes == 0) bytes = 4;  // Vulkan forbids empty buffers; keep size() honest
    if (bytes > ctx.caps().max_memory_allocation_size)
        throw GpuError(GpuError::Kind::OutOfMemory, VK_ERROR_OUT_OF_DEVICE_MEMORY,
                       "a buffer of " + std::to_string(bytes) + " bytes exceeds the device's largest allocation (" +
                           std::to_string(ctx.caps().max_memory_allocation_size) + " bytes)");
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = bytes;
    info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VK_CHECK(vkCreateBuffer(ctx.device(), &info, nullptr, &buffer_));

    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(ctx.device(), buffer_, &req);
    VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    alloc.allocationSize = req.size;
    if (memory == Memory::Device)
        alloc.memoryTypeIndex = ctx.memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
    else
        alloc.memoryTypeIndex = ctx.memory_type(
            req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
            VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    VkResult r = vkAllocateMemory(ctx.device(), &alloc, nullptr, &memory_);
    if (r != VK_SUCCESS) {
        vkDestroyBuffer(ctx.device(), buffer_, nullptr);
        buffer_ = VK_NULL_HANDLE;
        throw_vk_error(r, ("vkAllocateMemory(" + std::to_string(req.size) + " bytes)").c_str(), __FILE__, __LINE__);
    }
    VK_CHECK(vkBindBufferMemory(ctx.device(), buffer_, memory_, 0));
    if (memory == Memory::Host) VK_CHECK(vkMapMemory(ctx.device(), memory_, 0, VK_WHOLE_SIZE, 0, &mapped_));
}

Buffer::~Buffer() { release(); }

void Buffer::release() {
    if (!ctx_) return;
    if (mapped_) vkUnmapMemory(ctx_->device(), memory_);
    if (buffer_) vkDestroyBuffer(ctx_->device(), buffer_, nullptr);
    if (memory_) vkFreeMemory(ctx_->device(), memory_, nullptr);
    buffer_ = VK_NULL_HANDLE;
    memory_ = VK_NULL_HANDLE;
    mapped_ = nullptr;
    ctx_ = nullptr;
}

Buffer::Buffer(Buffer&& o) noexcept { *this = std::move(o); }

Buffer& Buffer::operator=(Buffer&& o) noexcept {
    if (this != &o) {
        release();
        ctx_ = o.ctx_;
        buffer_ = o.buffer_;
        memory_ = o.memory_;
        size_ = o.size_;
        mapped_ = o.mapped_;
        o.ctx_ = nullptr;
        o.buffer_ = VK_NULL_HANDLE;
        o.memory_ = VK_NULL_HANDLE;
        o.mapped_ = nullptr;
    }
    return *this;
}

namespace {
constexpr uint64_t kStagingChunk = 32ull << 20;  // large uploads go through a bounded staging buffer
}

void Buffer::upload(const void* src, uint64_t bytes, uint64_t offset) {
    if (offset + bytes > size_) throw std::out_of_range("Buffer::upload beyond the buffer's end");
    if (mapped_) {
        std::memcpy(static_cast<uint8_t*>(mapped_) + offset, src, bytes);
        return;
    }
    Buffer staging(*ctx_, std::min(bytes, kStagingChunk), Memory::Host);
    for (uint64_t done = 0; done < bytes;) {
        uint64_t n = std::min(bytes - done, kStagingChunk);
        std::memcpy(staging.mapped(), static_cast<const uint8_t*>(src) + done, n);
        ctx_->run_once([&](VkCommandBuffer cb) {
            VkBufferCopy region{0, offset + done, n};
            vkCmdCopyBuffer(cb, staging.handle(), buffer_, 1, &region);
        });
        done += n;
    }
}

void Buffer::download(void* dst, uint64_t bytes, uint64_t offset) const {
    if (offset + bytes > size_) throw std::out_of_range("Buffer::download beyond the buffer's end");
    if (mapped_) {
        std::memcpy(dst, static_cast<const uint8_t*>(mapped_) + offset, bytes);
        return;
    }
    Buffer staging(*ctx_, std::min(bytes, kStagingChunk), Memory::Host);
    for (uint64_t done = 0; done < bytes;) {
        uint64_t n = std::min(bytes - done, kStagingChunk);
        ctx_->run_once([&](VkCommandBuffer cb) {
            VkBufferCopy region{offset + done, 0, n};
            vkCmdCopyBuffer(cb, buffer_, staging.handle(), 1, &region);
        });
        std::memcpy(static_cast<uint8_t*>(dst) + done, staging.mapped(), n);
        done += n;
    }
}

void Buffer::fill_zero() {
    if (mapped_) {
        std::memset(mapped_, 0, size_);
        return;
    }
    ctx_->run_once([&](VkCommandBuffer cb) { vkCmdFillBuffer(cb, buffer_, 0, VK_WHOLE_SIZE, 0); });
}

}  // namespace vkllm::gpu
