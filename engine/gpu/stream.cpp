#include "gpu/stream.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

#include "gpu/device.h"
#include "gpu/error.h"
#include "gpu/pipeline.h"
#include "gpu/pipeline_collector.h"

namespace vkllm::gpu {
namespace {
constexpr uint32_t kSetsPerPool = 1024;
constexpr uint32_t kMaxBindingsPerSet = 8;
constexpr uint32_t kMaxTimestamps = 4096;
}  // namespace

Stream::Stream(Context& ctx) : ctx_(ctx) {
    VkDevice dev = ctx.device();
    VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool.queueFamilyIndex = ctx.queue_family();
    VK_CHECK(vkCreateCommandPool(dev, &pool, nullptr, &pool_));
    VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    alloc.commandPool = pool_;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    VK_CHECK(vkAllocateCommandBuffers(dev, &alloc, &cb_));
    VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VK_CHECK(vkCreateFence(dev, &fence, nullptr, &fence_));
    if (ctx.caps().timestamps) {
        VkQueryPoolCreateInfo q{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
        q.queryType = VK_QUERY_TYPE_TIMESTAMP;
        q.queryCount = kMaxTimestamps;
        VK_CHECK(vkCreateQueryPool(dev, &q, nullptr, &queries_));
    }
}

Stream::~Stream() {
    VkDevice dev = ctx_.device();
    if (recording_) vkEndCommandBuffer(cb_);
    for (VkDescriptorPool p : descriptor_pools_) vkDestroyDescriptorPool(dev, p, nullptr);
    if (queries_) vkDestroyQueryPool(dev, queries_, nullptr);
    vkDestroyFence(dev, fence_, nullptr);
    vkDestroyCommandPool(dev, pool_, nullptr);
}

bool Stream::collecting() const { return PipelineCollector::active(ctx_) != nullptr; }

void Stream::begin(bool reusable) {
    if (collecting()) {
        // Nothing is recorded: the command buffer keeps whatever it held, and no later
        // resubmit_and_wait may replay it as if it were this recording.
        dispatches_ = barriers_ = 0;
        layer_counts_.clear();
        labels_.clear();
        layer_ = -1;
        reusable_ = false;
        submitted_ = false;
        return;
    }
    VK_CHECK(vkResetCommandBuffer(cb_, 0));
    for (VkDescriptorPool p : descriptor_pools_) VK_CHECK(vkResetDescriptorPool(ctx_.device(), p, 0));
    current_pool_ = 0;
    labels_.clear();
    label_layers_.clear();
    label_dispatches_.clear();
    stamps_.clear();
    dispatches_ = 0;
    barriers_ = 0;
    pending_writes_.clear();
    transfer_since_barrier_ = true;  // what an earlier command buffer left may have been a copy
    last_barrier_ranges_.clear();
    layer_counts_.clear();
    layer_ = -1;
    reusable_ = reusable;
    submitted_ = false;
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = reusable ? 0 : VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    VK_CHECK(vkBeginCommandBuffer(cb_, &begin));
    recording_ = true;
    if (profiling_ && queries_) vkCmdResetQueryPool(cb_, queries_, 0, kMaxTimestamps);
}

VkDescriptorSet Stream::allocate_set(VkDescriptorSetLayout layout) {
    for (;;) {
        if (current_pool_ == descriptor_pools_.size()) {
            VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * kMaxBindingsPerSet};
            VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
            info.maxSets = kSetsPerPool;
            info.poolSizeCount = 1;
            info.pPoolSizes = &size;
            VkDescriptorPool pool = VK_NULL_HANDLE;
            VK_CHECK(vkCreateDescriptorPool(ctx_.device(), &info, nullptr, &pool));
            descriptor_pools_.push_back(pool);
        }
        VkDescriptorSetAllocateInfo alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
        alloc.descriptorPool = descriptor_pools_[current_pool_];
        alloc.descriptorSetCount = 1;
        alloc.pSetLayouts = &layout;
        VkDescriptorSet set = VK_NULL_HANDLE;
        VkResult r = vkAllocateDescriptorSets(ctx_.device(), &alloc, &set);
        if (r == VK_SUCCESS) return set;
        if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)
            throw_vk_error(r, "vkAllocateDescriptorSets", __FILE__, __LINE__);
        ++current_pool_;  // this pool is full: move on to the next (created on demand)
    }
}

void Stream::dispatch_bindings(const Pipeline& p, std::span<const BufferRange> buffers, const void* push,
                               uint32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz) {
    if (buffers.size() != p.n_buffers() || buffers.size() > kMaxBindingsPerSet)
        throw std::logic_error("dispatch of '" + p.name() + "' with " + std::to_string(buffers.size()) +
                               " buffers; the pipeline has " + std::to_string(p.n_buffers()));
    if (push_bytes != p.push_bytes())
        throw std::logic_error("dispatch of '" + p.name() + "': push constants of " + std::to_string(push_bytes) +
                               " bytes, the pipeline declares " + std::to_string(p.push_bytes()));
    const Capabilities& caps = ctx_.caps();
    for (uint32_t g : {gx, gy, gz})
        if (g == 0) return;  // nothing to do
    if (collecting()) return;  // the pipeline was what mattered
    if (gx > caps.max_workgroup_count[0] || gy > caps.max_workgroup_count[1] || gz > caps.max_workgroup_count[2])
        throw std::logic_error("dispatch of '" + p.name() + "' exceeds the device's workgroup count limits");

    VkDescriptorSet set = allocate_set(p.set_layout());
    VkDescriptorBufferInfo infos[kMaxBindingsPerSet];
    VkWriteDescriptorSet writes[kMaxBindingsPerSet];
    uint32_t i = 0;
    for (const BufferRange& b : buffers) {
        uint64_t size = b.size == VK_WHOLE_SIZE ? b.buffer->size() - b.offset : b.size;
        // Honour the (possibly clamped) binding limit so a mobile-class device is emulated faithfully.
        if (size > caps.max_storage_buffer_range)
            throw std::logic_error("dispatch of '" + p.name() + "': binding " + std::to_string(i) + " spans " +
                                   std::to_string(size) + " bytes, over the device's maxStorageBufferRange (" +
                                   std::to_string(caps.max_storage_buffer_range) + ")");
        if (b.offset % caps.min_storage_buffer_offset_alignment)
            throw std::logic_error("dispatch of '" + p.name() + "': binding " + std::to_string(i) +
                                   " has a misaligned offset " + std::to_string(b.offset));
        infos[i] = {b.buffer->handle(), b.offset, size ? size : VK_WHOLE_SIZE};
        if (p.written_bindings() >> i & 1) note_write(infos[i].buffer, infos[i].offset, infos[i].range);
        writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[i].dstSet = set;
        writes[i].dstBinding = i;
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[i].pBufferInfo = &infos[i];
        ++i;
    }
    vkUpdateDescriptorSets(ctx_.device(), i, writes, 0, nullptr);
    vkCmdBindPipeline(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, p.handle());
    vkCmdBindDescriptorSets(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout(), 0, 1, &set, 0, nullptr);
    if (push_bytes) vkCmdPushConstants(cb_, p.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes, push);
    vkCmdDispatch(cb_, gx, gy, gz);
    ++dispatches_;
    ++counts_here().dispatches;
}

Stream::Counts& Stream::counts_here() {
    const size_t i = size_t(std::max(layer_, -1) + 1);
    if (layer_counts_.size() <= i) layer_counts_.resize(i + 1);
    return layer_counts_[i];
}

// Widens the buffer's pending range to cover [offset, offset + size).
void Stream::note_write(VkBuffer buffer, uint64_t offset, uint64_t size) {
    const uint64_t end = size == VK_WHOLE_SIZE ? VK_WHOLE_SIZE : offset + size;
    for (WrittenRange& w : pending_writes_) {
        if (w.buffer != buffer) continue;
        const uint64_t w_end = w.size == VK_WHOLE_SIZE ? VK_WHOLE_SIZE : w.offset + w.size;
        const uint64_t lo = std::min(w.offset, offset), hi = std::max(w_end, end);
        w.offset = lo;
        w.size = hi == VK_WHOLE_SIZE ? VK_WHOLE_SIZE : hi - lo;
        return;
    }
    pending_writes_.push_back({buffer, offset, end == VK_WHOLE_SIZE ? VK_WHOLE_SIZE : size});
}

void Stream::barrier(const char*) {
    if (collecting()) return;
    // The transfer stage waits only when a copy or fill ran since the last barrier: a compute-only
    // stretch (most of a forward pass) does not make the GPU drain its copy work as well.
    const bool transfer = transfer_since_barrier_;
    const VkPipelineStageFlags src_stages =
        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | (transfer ? VK_PIPELINE_STAGE_TRANSFER_BIT : 0);
    std::vector<VkBufferMemoryBarrier> named(pending_writes_.size());
    for (size_t i = 0; i < named.size(); ++i) {
        VkBufferMemoryBarrier& b = named[i];
        b = {VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
        b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | (transfer ? VK_ACCESS_TRANSFER_WRITE_BIT : 0);
        b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                          VK_ACCESS_TRANSFER_WRITE_BIT;
        b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
        b.buffer = pending_writes_[i].buffer;
        b.offset = pending_writes_[i].offset;
        b.size = pending_writes_[i].size;
    }
    vkCmdPipelineBarrier(cb_, src_stages, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0,
                         nullptr, uint32_t(named.size()), named.data(), 0, nullptr);
    transfer_since_barrier_ = false;
    last_barrier_ranges_ = std::move(pending_writes_);
    pending_writes_.clear();
    ++barriers_;
    ++counts_here().barriers;
}

void Stream::copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset, uint64_t bytes) {
    if (!bytes || collecting()) return;
    VkBufferCopy region{src_offset, dst_offset, bytes};
    vkCmdCopyBuffer(cb_, src.handle(), dst.handle(), 1, &region);
    transfer_since_barrier_ = true;
    note_write(dst.handle(), dst_offset, bytes);
    ++counts_here().copies;
}

void Stream::copy_rows(const Buffer& src, uint64_t src_offset, uint64_t src_stride, const Buffer& dst,
                       uint64_t dst_offset, uint64_t dst_stride, uint64_t row_bytes, uint64_t rows) {
    if (!rows || !row_bytes || collecting()) return;
    if (src_offset + (rows - 1) * src_stride + row_bytes > src.size() ||
        dst_offset + (rows - 1) * dst_stride + row_bytes > dst.size())
        throw std::logic_error("Stream::copy_rows beyond a buffer's end");
    std::vector<VkBufferCopy> regions(rows);
    for (uint64_t i = 0; i < rows; ++i) regions[i] = {src_offset + i * src_stride, dst_offset + i * dst_stride, row_bytes};
    vkCmdCopyBuffer(cb_, src.handle(), dst.handle(), uint32_t(rows), regions.data());
    transfer_since_barrier_ = true;
    note_write(dst.handle(), dst_offset, (rows - 1) * dst_stride + row_bytes);
    ++counts_here().copies;
}

void Stream::fill_zero(const Buffer& dst, uint64_t offset, uint64_t bytes) {
    if (collecting()) return;
    vkCmdFillBuffer(cb_, dst.handle(), offset, bytes, 0);
    transfer_since_barrier_ = true;
    note_write(dst.handle(), offset, bytes);
    ++counts_here().copies;
}

void Stream::mark(const char* label) {
    if (collecting()) return;
    if (!profiling_ || !queries_ || labels_.size() + 1 >= kMaxTimestamps) return;
    vkCmdWriteTimestamp(cb_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, uint32_t(labels_.size()));
    labels_.emplace_back(label);
    label_layers_.push_back(layer_);
    label_dispatches_.push_back(dispatches_);
}

void Stream::submit_and_wait() {
    if (collecting()) return;
    if (profiling_ && queries_ && !labels_.empty()) mark("(end)");
    VK_CHECK(vkEndCommandBuffer(cb_));
    recording_ = false;
    submit_recorded_and_wait();
    submitted_ = true;
}

void Stream::resubmit_and_wait() {
    if (collecting()) return;
    if (!reusable_ || !submitted_ || recording_)
        throw std::logic_error("Stream::resubmit_and_wait without a submitted reusable recording");
    submit_recorded_and_wait();
}

void Stream::submit_recorded_and_wait() {
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cb_;
    VK_CHECK(vkResetFences(ctx_.device(), 1, &fence_));
    const auto start = std::chrono::steady_clock::now();
    const std::clock_t cpu_start = std::clock();
    ctx_.submit(submit, fence_);
    VK_CHECK(vkWaitForFences(ctx_.device(), 1, &fence_, VK_TRUE, UINT64_MAX));
    if (log_pipelines()) {
        // Wall time, and the CPU time of the whole process (a CPU device compiles and runs the
        // dispatches on threads of its own).
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const double cpu = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
        if (s > 0.2) std::fprintf(stderr, "vkllm: submit took %.2f s (process CPU %.2f s)\n", s, cpu);
    }
    stamps_.assign(labels_.size(), 0);
    if (!labels_.empty())
        VK_CHECK(vkGetQueryPoolResults(ctx_.device(), queries_, 0, uint32_t(labels_.size()),
                                       stamps_.size() * sizeof(uint64_t), stamps_.data(), sizeof(uint64_t),
                                       VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
}

std::vector<std::pair<std::string, double>> Stream::timings() const {
    std::vector<std::pair<std::string, double>> out;
    for (const Interval& i : intervals()) out.emplace_back(i.label, i.ms);
    return out;
}

std::vector<Stream::Interval> Stream::intervals() const {
    std::vector<Interval> out;
    double ns = ctx_.caps().timestamp_period_ns;
    for (size_t i = 0; i + 1 < stamps_.size(); ++i)
        out.push_back({labels_[i], label_layers_[i], double(stamps_[i + 1] - stamps_[i]) * ns * 1e-6,
                       label_dispatches_[i + 1] - label_dispatches_[i]});
    return out;
}

}  // namespace vkllm::gpu
