#include "gpu/pipeline.h"

#include "gpu/device.h"
#include "gpu/error.h"
#include "gpu/shaders.h"
#include "gpu/spirv_bindings.h"

namespace vkllm::gpu {

std::string PipelineRequest::key() const {
    std::string key = shader;
    for (uint32_t s : spec_constants) key += ":" + std::to_string(s);
    return key;
}

Pipeline::Pipeline(Context& ctx, const std::string& shader, uint32_t n_buffers, uint32_t push_bytes,
                   const std::vector<uint32_t>& spec_constants, bool create)
    : ctx_(ctx), name_(shader), n_buffers_(n_buffers), push_bytes_(push_bytes) {
    const EmbeddedShader* spv = find_shader(shader);
    if (!spv) throw std::logic_error("no embedded shader variant named '" + shader + "' (see shaders/variants.cmake)");
    // The C++ push constants (push_bytes, their sizeof) against the shader's block.
    if (const uint32_t declared = spirv_push_constants(spv->code, spv->size / 4).size; push_bytes != declared)
        throw std::logic_error("shader '" + shader + "' declares " + std::to_string(declared) +
                               " bytes of push constants; its pipeline was asked for " + std::to_string(push_bytes));
    if (push_bytes > ctx.caps().max_push_constants_size)
        throw_unsupported("shader '" + shader + "' needs " + std::to_string(push_bytes) +
                          " bytes of push constants; the device allows " +
                          std::to_string(ctx.caps().max_push_constants_size));
    written_bindings_ = spirv_written_bindings(spv->code, spv->size / 4);
    if (!create) return;
    VkDevice dev = ctx.device();

    VkShaderModuleCreateInfo module{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    module.codeSize = spv->size;
    module.pCode = spv->code;
    VK_CHECK(vkCreateShaderModule(dev, &module, nullptr, &module_));

    std::vector<VkDescriptorSetLayoutBinding> bindings(n_buffers);
    for (uint32_t i = 0; i < n_buffers; ++i)
        bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo set{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    set.bindingCount = n_buffers;
    set.pBindings = bindings.data();
    VK_CHECK(vkCreateDescriptorSetLayout(dev, &set, nullptr, &set_layout_));

    VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
    VkPipelineLayoutCreateInfo layout{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    layout.setLayoutCount = 1;
    layout.pSetLayouts = &set_layout_;
    layout.pushConstantRangeCount = push_bytes ? 1 : 0;
    layout.pPushConstantRanges = &push;
    VK_CHECK(vkCreatePipelineLayout(dev, &layout, nullptr, &layout_));

    std::vector<VkSpecializationMapEntry> entries(spec_constants.size());
    for (uint32_t i = 0; i < entries.size(); ++i) entries[i] = {i, i * 4u, 4};
    VkSpecializationInfo spec{uint32_t(entries.size()), entries.data(), spec_constants.size() * 4,
                              spec_constants.data()};

    VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.stage.module = module_;
    info.stage.pName = "main";
    info.stage.pSpecializationInfo = spec_constants.empty() ? nullptr : &spec;
    info.layout = layout_;
    VK_CHECK(vkCreateComputePipelines(dev, ctx.pipeline_cache(), 1, &info, nullptr, &pipeline_));
}

void Pipeline::compile_elsewhere(std::shared_future<void> done) const {
    if (elsewhere_pending_.load()) return;  // a compile elsewhere is under way already
    elsewhere_ = std::move(done);
    elsewhere_pending_.store(true, std::memory_order_release);
}

void Pipeline::wait_elsewhere() const {
    // elsewhere_ is never written again once pending is set, so waiting threads only read it.
    elsewhere_.wait();
    elsewhere_pending_.store(false, std::memory_order_release);
}

Pipeline::~Pipeline() {
    VkDevice dev = ctx_.device();
    if (pipeline_) vkDestroyPipeline(dev, pipeline_, nullptr);
    if (layout_) vkDestroyPipelineLayout(dev, layout_, nullptr);
    if (set_layout_) vkDestroyDescriptorSetLayout(dev, set_layout_, nullptr);
    if (module_) vkDestroyShaderModule(dev, module_, nullptr);
}

}  // namespace vkllm::gpu
