#include "gpu/pipeline_collector.h"

#include <stdexcept>

namespace vkllm::gpu {
namespace {
thread_local PipelineCollector* t_collector = nullptr;
}  // namespace

PipelineCollector::PipelineCollector(Context& ctx) : ctx_(ctx) {
    if (t_collector) throw std::logic_error("PipelineCollector: this thread is already collecting");
    t_collector = this;
}

PipelineCollector::~PipelineCollector() { t_collector = nullptr; }

PipelineCollector* PipelineCollector::active(const Context& ctx) {
    return t_collector && &t_collector->ctx_ == &ctx ? t_collector : nullptr;
}

const Pipeline& PipelineCollector::placeholder(const PipelineRequest& request) {
    const std::string key = request.key();
    auto it = placeholders_.find(key);
    if (it != placeholders_.end()) return *it->second;
    auto p = std::make_unique<Pipeline>(ctx_, request.shader, request.n_buffers, request.push_bytes,
                                        request.spec_constants, /*create=*/false);
    requests_.push_back(request);
    return *placeholders_.emplace(key, std::move(p)).first->second;
}

}  // namespace vkllm::gpu
