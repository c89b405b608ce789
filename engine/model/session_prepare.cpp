// Session::prepare: the pipelines of the session's first steps (model/pipeline_prepare.h),
// compiled ahead on several threads (gpu/pipeline_prepare.h): the prompt's before returning, the
// decode step's in the background where the driver compiles at the first dispatch (there the
// prompt's evaluation can start while they compile; elsewhere they are compiled with the prompt's).
#include <stdexcept>
#include <string>

#include "gpu/device.h"
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
    gpu::Context& ctx = in.context();
    model::FirstStepPipelines steps =
        model::first_step_pipelines(ctx, in.spec(), in.weights(), shape, options.prompt_tokens);
    const int total = int(steps.prompt.size() + steps.decode.size());
    if (!ctx.compiles_at_first_dispatch()) {
        steps.prompt.insert(steps.prompt.end(), steps.decode.begin(), steps.decode.end());
        steps.decode.clear();
    }
    PrepareProgress last{0, total, ""};
    gpu::prepare_pipelines(ctx, steps.prompt, options.threads, [&](const gpu::PrepareStatus& st) {
        last = {int(st.done), total, st.what};
        if (progress) progress(last);
    });
    if (!steps.decode.empty()) {
        last.background = int(gpu::prepare_in_background(ctx, steps.decode, options.threads));
        last.done = total;
        if (last.what.empty()) last.what = steps.decode.back().key();
        if (progress) progress(last);
    }
    return last;
}

}  // namespace vkllm
