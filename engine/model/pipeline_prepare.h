// The pipelines a session's first steps use, found by recording those steps without running
// them (gpu/pipeline_collector.h), for Session::prepare to compile ahead of the first eval.
#pragma once

#include <vector>

#include "gpu/pipeline.h"
#include "model/spec.h"
#include "model/weights.h"
#include "vkllm/kv_cache_type.h"
#include "vkllm/probe.h"
#include "vkllm/session.h"

namespace vkllm::gpu { class Context; }

namespace vkllm::model {

// What decides a session's pipelines besides the model: its forward pass's shape and options.
struct StepShape {
    int n_ctx = 0, n_batch = 0;       // the session's (n_batch as its Forward clamped it)
    bool round_activations = true;
    KvCacheType cache = KvCacheType::Auto;  // as the session's Forward resolved it
    ProbeConfig probes;
    std::vector<ResidualEdit> edits;
};

// The pipelines not created on ctx yet that a first prompt of prompt_tokens tokens (in passes
// of n_batch) and the first decode step after it record, each in first-use order.
struct FirstStepPipelines {
    std::vector<gpu::PipelineRequest> prompt;  // the prompt's passes (an encoder's one pass)
    std::vector<gpu::PipelineRequest> decode;  // the decode step's beyond the prompt's
};

// The pipelines of a first prompt and decode step, with the shape's probes and edits; an
// encoder's one pass over min(prompt_tokens, n_batch) tokens with the file's pooling. The steps
// are recorded on a Forward of their own, made for the purpose with a context just long enough
// for them, so the session's caches are untouched and little memory is held meanwhile.
FirstStepPipelines first_step_pipelines(gpu::Context& ctx, const ModelSpec& spec, const Weights& weights,
                                        const StepShape& shape, int prompt_tokens);

}  // namespace vkllm::model
