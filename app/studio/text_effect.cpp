#include "text_effect.h"

namespace vkllm::studio {

TextJudgement judge_over_text(Model& model, Session& session, const SessionOptions& scratch_options,
                              const InterventionState& before, const InterventionState& after) {
    const std::vector<int32_t> tokens = session.tokens();
    SessionOptions options = scratch_options;
    options.n_ctx = session.n_ctx();
    options.n_batch = session.n_batch();
    Session scratch(model, options);
    TextJudgement j;
    j.text = app::text_effect_streamed(model, scratch, session, tokens, before, after, 5, &j.next_before, &j.next_after);
    return j;
}

InterventionState weights_zeroed(const Model& model, const std::vector<ResidualEdit>& residual) {
    InterventionState s;
    for (const WeightRef& w : model.weight_edits()) s.weights.emplace_back(w, 0.0f);
    s.residual = residual;
    return s;
}

}  // namespace vkllm::studio
