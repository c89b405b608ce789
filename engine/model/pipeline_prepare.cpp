#include "model/pipeline_prepare.h"

#include <algorithm>
#include <stdexcept>

#include "gpu/pipeline_collector.h"
#include "model/forward.h"

namespace vkllm::model {
namespace {

bool is_encoder(const ModelSpec& spec) {
    return std::none_of(spec.layers.begin(), spec.layers.end(), [](const LayerSpec& L) { return L.attn.causal; });
}

}  // namespace

FirstStepPipelines first_step_pipelines(gpu::Context& ctx, const ModelSpec& spec, const Weights& weights,
                                        const StepShape& shape, int prompt_tokens) {
    if (prompt_tokens < 1) throw std::invalid_argument("prepare: the prompt needs at least one token");
    const bool encoder = is_encoder(spec);
    const int n_prompt = std::min(prompt_tokens, encoder ? shape.n_batch : shape.n_ctx - 1);
    if (n_prompt < 1) throw std::invalid_argument("prepare: a context of one token leaves no room to decode");
    // The first decode step sees its keys rounded up to a replay bucket (Forward::kReplayKeys);
    // a context that long (and at least a batch, so the batch is clamped as the session's was)
    // gives the same attention plans as the session's at those positions.
    const int decode_keys = (n_prompt + 1 + Forward::kReplayKeys - 1) / Forward::kReplayKeys * Forward::kReplayKeys;
    const int n_ctx = std::min(shape.n_ctx, std::max({shape.n_batch, decode_keys, n_prompt + 1}));

    gpu::PipelineCollector collector(ctx);
    Forward f(ctx, spec, weights, n_ctx, shape.n_batch, shape.round_activations, shape.cache);
    f.set_residual_edits(shape.edits);
    const std::vector<int32_t> ids(size_t(std::max(n_prompt, 1)), 0);
    if (encoder) {
        const Pooling pooling = spec.pooling == Pooling::Model ? Pooling::None : spec.pooling;
        std::vector<float> embd(size_t(pooling == Pooling::None ? n_prompt : 1) * size_t(spec.n_embd));
        f.encode(ids.data(), n_prompt, pooling, embd.data(), nullptr, shape.probes, nullptr);
        return {collector.requests(), {}};
    }
    // The logits are never written while collecting; they only need room.
    std::vector<float> logits(size_t(spec.n_vocab));
    for (int done = 0; done < n_prompt;) {
        const int t = std::min(f.n_batch(), n_prompt - done);
        f.step(ids.data() + done, t, done, false, logits.data(), shape.probes, nullptr, done == 0);
        done += t;
    }
    const size_t n_for_prompt = collector.requests().size();
    f.step(ids.data(), 1, n_prompt, false, logits.data(), shape.probes, nullptr);
    const std::vector<gpu::PipelineRequest>& all = collector.requests();
    return {{all.begin(), all.begin() + long(n_for_prompt)}, {all.begin() + long(n_for_prompt), all.end()}};
}

}  // namespace vkllm::model
