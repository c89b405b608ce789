// Vulkan instance, device selection and the capability record every op consults.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "vkllm/device.h"

namespace vkllm::gpu {

class Buffer;
class Pipeline;
struct PipelineRequest;
enum class ShaderId : uint16_t;  // gpu/shader_ids.h (generated from shaders/variants.cmake)

// What a device can do. Ops choose their variants from this record, never from assumptions.
// It is the public vkllm::DeviceCapabilities (vkllm/device.h), so the record people read
// (DeviceInfo, engine/model/device_info.cpp) is this one with a few derived fields.
using Capabilities = DeviceCapabilities;

// The sum of the device-local heaps' sizes.
uint64_t device_local_bytes(const Capabilities& caps);

// Applies VKLLM_LIMITS (currently "mobile" or unset/"native"): 128 MiB bindings, 16 KiB shared
// memory, no fp16, int8, integer dot product or subgroup arithmetic. Throws for an unknown profile.
void apply_limits_profile(Capabilities& caps, const std::string& profile);

struct ContextOptions {
    std::string device;      // index or name substring; empty: VKLLM_DEVICE, else the best device
    int validate = -1;       // -1: from VKLLM_VALIDATE; 0/1 force
    std::string limits;      // empty: from VKLLM_LIMITS
    int integer_dot = -1;    // -1: from VKLLM_INTEGER_DOT, else where accelerated; 0/1 force (1: where supported)
    // false: no pipeline cache or pipeline list is read or written (a second device that only
    // compiles shaders into the driver's own cache, gpu/pipeline_prepare.h).
    bool pipeline_cache = true;
};

// Lists every physical device with its capability record (no logical device created).
std::vector<Capabilities> enumerate_devices();

// Count of validation-layer errors seen by any context in this process.
uint64_t validation_error_count();

// One logical device with one compute queue. pipeline(), run_once() and submit() may be called
// from several threads at once (the Sessions of one Model on different worker threads); the
// rest is set up once and then only read.
class Context {
public:
    static std::unique_ptr<Context> create(const ContextOptions& options = {});
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    const Capabilities& caps() const { return caps_; }
    VkDevice device() const { return device_; }
    VkPhysicalDevice physical_device() const { return physical_; }
    VkQueue queue() const { return queue_; }
    uint32_t queue_family() const { return queue_family_; }
    VkPipelineCache pipeline_cache() const { return pipeline_cache_; }
    bool validation_enabled() const { return validation_; }
    // True once this context created a pipeline that no earlier run on this device did (the
    // list of pipeline keys, with a hash of their SPIR-V, kept beside the pipeline cache): its
    // shaders were compiled in this run, whatever the driver caches (lavapipe compiles at the
    // first dispatch and keeps the result in Mesa's shader cache, not in VkPipelineCache, so
    // neither creation time nor the pipeline cache's size shows it).
    bool compiled_new_pipelines() const;

    // Memory type index with all of `required` flags (and `preferred` if possible); throws if none.
    uint32_t memory_type(uint32_t type_bits, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) const;

    // A compute pipeline for a shader variant with specialization constants (IDs 0..n-1),
    // created once and cached for the context's lifetime. Threads asking for different pipelines
    // create them concurrently; a thread asking for one being created waits for it. While the
    // calling thread collects (gpu/pipeline_collector.h), a pipeline not created yet is a
    // placeholder that is noted, not created.
    const Pipeline& pipeline(const PipelineRequest& request);
    const Pipeline& pipeline(const std::string& shader, uint32_t n_buffers, uint32_t push_bytes,
                             const std::vector<uint32_t>& spec_constants = {});
    // The same by identifier (ShaderId::matvec_q4_0_sg): what the ops call. push_bytes must equal
    // the size of the shader's push-constant block (checked against its SPIR-V at creation).
    const Pipeline& pipeline(ShaderId shader, uint32_t n_buffers, uint32_t push_bytes,
                             const std::vector<uint32_t>& spec_constants = {});

    // Runs `record` in a one-off command buffer and waits for it (uploads, downloads).
    template <class F> void run_once(F&& record);
    // vkQueueSubmit on the context's queue, which Vulkan requires to be externally synchronised.
    void submit(const VkSubmitInfo& info, VkFence fence);
    VkCommandBuffer begin_one_off();
    void end_one_off(VkCommandBuffer cb);

    // A device-local buffer holding `bytes` (read-only tables a shader binds, such as the
    // i-quants' codebooks), uploaded on the first call with `key` and kept for the context's
    // lifetime; later calls with the same key return the same buffer. Thread-safe. Throws when a
    // key comes back with bytes of another size or content (one key names one table).
    const Buffer& constant_buffer(const std::string& key, std::span<const uint8_t> bytes);

    // Pipelines created so far.
    size_t pipeline_count() const;
    // Whether an earlier run on this device created this pipeline (the pipeline list), so the
    // driver's shader cache likely holds it compiled.
    bool created_before(const PipelineRequest& request) const;
    // True where the driver compiles a pipeline's code at its first dispatch rather than at
    // vkCreateComputePipelines (lavapipe: llvmpipe compiles the shader variant it launches), so
    // compiling ahead means dispatching ahead (gpu/pipeline_prepare.h).
    bool compiles_at_first_dispatch() const;
    // Options that open this context's device again with the same settings (validation off, no
    // pipeline cache files): a second device to compile on.
    ContextOptions sibling_options() const;

private:
    Context() = default;
    void create_instance(bool validate);
    void create_device(uint32_t index);
    void load_pipeline_cache();
    void save_pipeline_cache();
    std::string pipeline_list_path() const;
    void save_pipeline_list();

    VkInstance instance_ = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
    VkPhysicalDevice physical_ = VK_NULL_HANDLE;
    VkDevice device_ = VK_NULL_HANDLE;
    VkQueue queue_ = VK_NULL_HANDLE;
    uint32_t queue_family_ = 0;
    VkCommandPool one_off_pool_ = VK_NULL_HANDLE;
    VkFence one_off_fence_ = VK_NULL_HANDLE;
    VkPipelineCache pipeline_cache_ = VK_NULL_HANDLE;
    std::string pipeline_cache_path_;
    std::set<std::string> known_pipelines_;  // keys created by earlier runs on this device
    std::vector<std::string> new_pipelines_;  // keys this context created that were not known
    VkPhysicalDeviceMemoryProperties memory_props_{};
    Capabilities caps_;
    bool validation_ = false;
    // One slot per pipeline key; a slot's pipeline is created once (outside pipelines_mutex_, so
    // different pipelines are created concurrently) and `ready` is set after.
    struct PipelineSlot;
    std::map<std::string, std::shared_ptr<PipelineSlot>> pipelines_;
    // "key spirv-hash": what the pipeline list calls a pipeline.
    static std::string listed_name(const PipelineRequest& request);
    void note_created(const PipelineRequest& request);
    mutable std::mutex pipelines_mutex_;  // guards pipelines_ (the map) and new_pipelines_
    // constant_buffer's tables by key, with a copy of their bytes to check a repeated key against.
    struct ConstantSlot;
    std::map<std::string, std::unique_ptr<ConstantSlot>> constants_;
    std::mutex constants_mutex_;  // guards constants_
    std::mutex queue_mutex_;      // guards queue_ submissions
    std::mutex one_off_mutex_;    // guards the one-off command pool and fence
};

template <class F>
void Context::run_once(F&& record) {
    std::lock_guard<std::mutex> lock(one_off_mutex_);
    VkCommandBuffer cb = begin_one_off();
    record(cb);
    end_one_off(cb);
}

}  // namespace vkllm::gpu
