// Session::prepare: the pipelines of the session's first steps (model/pipeline_prepare.h),
// compiled ahead on several threads (gpu/pipeline_prepare.h).
#include <stdexcept>
#include <string>

#include "gpu/pipeline_prepare.h"
#include "model/model_internal.h"
#include "model/pipeline_prepare.h"
#include "model/session_impl.h"
#include "vkllm/session.h"

namespace vkllm {

PrepareProgress Session::prepare(const PrepareOptions& options, const PrepareCallback& progress) {
    if (options.prompt_tokens < 1)
        throw std::invalid_argument("prepare: prompt_tokens must be at least 1, got " +
                                    std::to_string(options.prompt_tokens));
    if (options.threads < 0)
        throw std::invalid_argument("prepare: threads must be >= 0, got " + std::to_string(options.threads));
    Impl& s = *impl_;
    const auto& in = s.model.internals();
    model::StepShape shape;
    shape.n_ctx = s.forward->n_ctx();
    shape.n_batch = s.forward->n_batch();
    shape.round_activations = s.options.llama_cpp_rounding;
    shape.cache = s.forward->cache_type();
    shape.probes = s.probes;
    shape.edits = s.edits;
    const std::vector<gpu::PipelineRequest> requests =
        model::first_step_pipelines(in.context(), in.spec(), in.weights(), shape, options.prompt_tokens);
    PrepareProgress last{0, int(requests.size()), ""};
    gpu::prepare_pipelines(in.context(), requests, options.threads, [&](const gpu::PrepareStatus& st) {
        last = {int(st.done), int(st.total), st.what};
        if (progress) progress(last);
    });
    return last;
}

}  // namespace vkllm
