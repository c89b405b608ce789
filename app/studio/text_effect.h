// The studio's interventions judged over the whole conversation (app/common/text_effect.h holds
// the arithmetic and the streamed evaluation, shared with `vkllm run --effect-text`).
#pragma once

#include <cstdint>
#include <vector>

#include "intervention_effect.h"  // app/common

namespace vkllm::studio {

using app::InterventionState;
using app::PositionShift;
using app::TextEffect;
using app::text_effect;

// An edit judged over the session's text without keeping any position's logits: the text is
// evaluated before the edit in a second session (`scratch_options`: the studio's session's
// context and passes) and after it in `session`, one forward pass at a time in turn. `before`
// and `after` are the weight and residual edits in force on either side; the studio's weight
// edits are zeros (the Activations panel's "zero" button), so weights_zeroed() makes a state
// from the model's edit list. Leaves `session` holding the text under `after`, its probes as
// they were, and fills the next token's logits (the last position) on both sides.
struct TextJudgement {
    TextEffect text;
    std::vector<float> next_before, next_after;  // [n_vocab] logits of the last position
};
TextJudgement judge_over_text(Model& model, Session& session, const SessionOptions& scratch_options,
                              const InterventionState& before, const InterventionState& after);

// The model's weight edits in force as a state whose every edit is a zero, with these residual edits.
InterventionState weights_zeroed(const Model& model, const std::vector<ResidualEdit>& residual);

}  // namespace vkllm::studio
