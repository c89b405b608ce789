// Collecting the pipelines a recording uses, without compiling or running anything. While a
// PipelineCollector for a context lives on a thread, that thread's Context::pipeline calls for
// pipelines the context has not created yet return placeholders (shader and push constants
// checked, no Vulkan objects) and note the request, and every Stream of that context records
// nothing and submits nothing. Other threads see the context as usual. A forward pass recorded
// this way names every pipeline it would use; gpu/pipeline_prepare.h then compiles them.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpu/pipeline.h"

namespace vkllm::gpu {

class Context;

class PipelineCollector {
public:
    // Starts collecting on the calling thread; one collector per thread at a time.
    explicit PipelineCollector(Context& ctx);
    ~PipelineCollector();
    PipelineCollector(const PipelineCollector&) = delete;
    PipelineCollector& operator=(const PipelineCollector&) = delete;

    // The pipelines asked for that the context had not created, one per key, in first-use order.
    const std::vector<PipelineRequest>& requests() const { return requests_; }

    // The collector active on the calling thread for `ctx`, or null.
    static PipelineCollector* active(const Context& ctx);
    // Context::pipeline's answer while collecting: notes the request, returns its placeholder.
    const Pipeline& placeholder(const PipelineRequest& request);

private:
    Context& ctx_;
    std::vector<PipelineRequest> requests_;
    std::map<std::string, std::unique_ptr<Pipeline>> placeholders_;
};

}  // namespace vkllm::gpu
