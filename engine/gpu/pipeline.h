// A compute pipeline: one shader variant, its storage-buffer bindings (0..n-1, set 0), its push
// constants and specialization constants (IDs 0..n-1, all 32-bit).
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <future>
#include <string>
#include <vector>

namespace vkllm::gpu {

class Context;

// VKLLM_LOG_PIPELINES=1: Context::pipeline prints each pipeline it creates, and Stream each submit
// that takes over 0.2 s with its wall and process CPU time, to stderr: a program's shader compiles
// and their cost (lavapipe compiles a pipeline at its first dispatch: seconds each when Mesa's
// shader cache is cold).
bool log_pipelines();

// What Context::pipeline is asked for: a shader variant, its bindings, push constants and
// specialization constants. key() names it in the context's table, logs and the pipeline list.
struct PipelineRequest {
    std::string shader;
    uint32_t n_buffers = 0, push_bytes = 0;
    std::vector<uint32_t> spec_constants;

    std::string key() const;  // "matvec_f32_sg:8:8:0:0:0"
};

class Pipeline {
public:
    // create = false: the shader is found and its push constants checked as for a real one, but
    // no Vulkan object is made (handle() is null): what a PipelineCollector hands out while a
    // recording is only collecting the pipelines it uses (gpu/pipeline_collector.h).
    Pipeline(Context& ctx, const std::string& shader, uint32_t n_buffers, uint32_t push_bytes,
             const std::vector<uint32_t>& spec_constants, bool create = true);
    ~Pipeline();
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;

    const std::string& name() const { return name_; }
    // Waits first for a compile of this pipeline's code on another device (compile_elsewhere).
    VkPipeline handle() const {
        if (elsewhere_pending_.load(std::memory_order_acquire)) wait_elsewhere();
        return pipeline_;
    }
    // Where the driver compiles at the first dispatch (lavapipe): `done` becomes ready when
    // another device of the same driver has compiled this pipeline's code into the driver's shader
    // cache (gpu/pipeline_prepare.h's background preparation). Until then handle() waits for it, so
    // the first dispatch here loads the code from that cache instead of compiling it a second time
    // beside the other device. Set before any other thread uses the pipeline; while one compile
    // elsewhere is pending, another is ignored.
    void compile_elsewhere(std::shared_future<void> done) const;
    VkPipelineLayout layout() const { return layout_; }
    VkDescriptorSetLayout set_layout() const { return set_layout_; }
    uint32_t n_buffers() const { return n_buffers_; }
    uint32_t push_bytes() const { return push_bytes_; }
    // Bit b: the shader may write the buffer at binding b (from its SPIR-V: not `readonly`).
    uint64_t written_bindings() const { return written_bindings_; }

private:
    Context& ctx_;
    std::string name_;
    uint32_t n_buffers_, push_bytes_;
    uint64_t written_bindings_ = 0;
    VkShaderModule module_ = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
    VkPipelineLayout layout_ = VK_NULL_HANDLE;
    VkPipeline pipeline_ = VK_NULL_HANDLE;
    void wait_elsewhere() const;
    mutable std::shared_future<void> elsewhere_;
    mutable std::atomic<bool> elsewhere_pending_{false};
};

}  // namespace vkllm::gpu
