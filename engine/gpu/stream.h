// A command stream: records dispatches, barriers and timestamps into one command buffer,
// submits it and waits. Descriptor sets come from pools owned by the stream and are recycled
// when the stream is reset. While the calling thread collects pipelines for the stream's
// context (gpu/pipeline_collector.h), every call checks its arguments as usual but records and
// submits nothing.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gpu/buffer.h"

namespace vkllm::gpu {

class Context;
class Pipeline;

class Stream {
public:
    explicit Stream(Context& ctx);
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    Context& context() const { return ctx_; }

    // Starts recording (resets the command buffer, descriptor pools and timestamps). A reusable
    // recording can be submitted again (resubmit_and_wait) until the next begin(): its
    // descriptor sets stay allocated, and the buffers it names must outlive it.
    void begin(bool reusable = false);
    // Binds `buffers` to bindings 0..n-1 and dispatches `groups` workgroups.
    void dispatch(const Pipeline& p, std::initializer_list<BufferRange> buffers, const void* push,
                  uint32_t push_bytes, uint32_t gx, uint32_t gy = 1, uint32_t gz = 1) {
        dispatch_bindings(p, std::span<const BufferRange>(buffers.begin(), buffers.size()), push, push_bytes, gx, gy, gz);
    }
    // The same with a binding list built at run time (a weight op appends a codebook binding).
    void dispatch_bindings(const Pipeline& p, std::span<const BufferRange> buffers, const void* push,
                           uint32_t push_bytes, uint32_t gx, uint32_t gy = 1, uint32_t gz = 1);
    template <class Push>
    void dispatch(const Pipeline& p, std::initializer_list<BufferRange> buffers, const Push& push, uint32_t gx,
                  uint32_t gy = 1, uint32_t gz = 1) {
        dispatch(p, buffers, &push, sizeof(Push), gx, gy, gz);
    }
    // Orders every earlier shader or transfer write before every later shader or transfer access:
    // an execution dependency on all earlier work (on the compute stage alone when no copy or
    // fill was recorded since the previous barrier or the recording's start: the earlier
    // transfers were ordered by that barrier already), and memory dependencies on the buffer ranges
    // written since the previous barrier (the bindings a pipeline's SPIR-V does not declare
    // readonly, and transfer destinations), each named by a VkBufferMemoryBarrier. Writes before
    // the previous barrier were made visible by it. `why` names what it orders (kept for
    // debugging; the call site carries the comment).
    void barrier(const char* why);
    // The buffer ranges the last barrier named (for tests): one per buffer, spanning its writes.
    struct WrittenRange {
        VkBuffer buffer = VK_NULL_HANDLE;
        uint64_t offset = 0, size = 0;  // size VK_WHOLE_SIZE: to the end
    };
    const std::vector<WrittenRange>& last_barrier_ranges() const { return last_barrier_ranges_; }
    void copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset, uint64_t bytes);
    // Strided rows: `rows` copies of `row_bytes`, the i-th from src_offset + i * src_stride to
    // dst_offset + i * dst_stride (all in bytes), in one command.
    void copy_rows(const Buffer& src, uint64_t src_offset, uint64_t src_stride, const Buffer& dst, uint64_t dst_offset,
                   uint64_t dst_stride, uint64_t row_bytes, uint64_t rows);
    void fill_zero(const Buffer& dst, uint64_t offset = 0, uint64_t bytes = VK_WHOLE_SIZE);

    // Timestamps: when profiling is on, mark(label) closes the previous interval and opens one
    // named `label`, tagged with the current layer (set_layer; -1 outside the layers).
    // After submit(), timings() gives (label, GPU milliseconds) of each interval in recorded
    // order, and intervals() the same with each one's layer and the dispatches recorded in it.
    struct Interval {
        std::string label;
        int layer = -1;
        double ms = 0;
        uint32_t dispatches = 0;
    };
    void set_profiling(bool on) { profiling_ = on; }
    bool profiling() const { return profiling_; }
    void set_layer(int layer) { layer_ = layer; }
    void mark(const char* label);
    std::vector<std::pair<std::string, double>> timings() const;
    std::vector<Interval> intervals() const;

    // Ends recording, submits and blocks until the GPU has finished.
    void submit_and_wait();
    // Submits the last recording again and blocks until the GPU has finished (it must have been
    // begun reusable and submitted once). Its counts and timings stay those of the recording.
    void resubmit_and_wait();
    // Dispatches and barriers recorded since begin() (counted whether or not profiling is on).
    // A dispatch is counted when vkCmdDispatch is recorded (not per mark; an empty dispatch
    // records nothing and is not counted); a barrier per vkCmdPipelineBarrier; a copy per
    // transfer command (copy, copy_rows, fill_zero).
    uint32_t dispatch_count() const { return dispatches_; }
    uint32_t barrier_count() const { return barriers_; }
    // The same counts split by the layer set with set_layer(): index layer + 1 (0: outside the
    // layers), sized to the highest layer seen since begin().
    struct Counts {
        uint32_t dispatches = 0, barriers = 0, copies = 0;
        bool operator==(const Counts&) const = default;
    };
    const std::vector<Counts>& layer_counts() const { return layer_counts_; }

private:
    bool collecting() const;
    VkDescriptorSet allocate_set(VkDescriptorSetLayout layout);
    void note_write(VkBuffer buffer, uint64_t offset, uint64_t size);
    std::vector<WrittenRange> pending_writes_;  // since the last barrier, one entry per buffer
    bool transfer_since_barrier_ = true;        // a copy or fill was recorded since the last barrier
    std::vector<WrittenRange> last_barrier_ranges_;
    Context& ctx_;
    VkCommandPool pool_ = VK_NULL_HANDLE;
    VkCommandBuffer cb_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    std::vector<VkDescriptorPool> descriptor_pools_;
    size_t current_pool_ = 0;
    VkQueryPool queries_ = VK_NULL_HANDLE;
    std::vector<std::string> labels_;
    std::vector<int> label_layers_;
    std::vector<uint32_t> label_dispatches_;  // dispatches_ when each mark was written
    int layer_ = -1;
    std::vector<uint64_t> stamps_;
    bool profiling_ = false;
    bool recording_ = false;
    bool reusable_ = false;  // the last recording may be resubmitted
    bool submitted_ = false;  // ... and was submitted once
    void submit_recorded_and_wait();
    uint32_t dispatches_ = 0;
    uint32_t barriers_ = 0;
    std::vector<Counts> layer_counts_;
    Counts& counts_here();  // layer_counts_ of the current layer
};

}  // namespace vkllm::gpu
