// The intervention options of vkllm run and vkllm perplexity: --zero-weight, --set-activation,
// and --effect-text, which judges them over a whole text (app/common/intervention_effect.h, the
// same arithmetic as the studio's): each position's KL(before || after), the text's perplexity
// before and after, and the positions that moved most.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "intervention_effect.h"

#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm::cli {

// "LAYER:TENSOR:ROW:COL[:EXPERT]", several separated by commas: weight[ROW, COL] of
// blk.LAYER.TENSOR (PyTorch's order: ROW the output channel). Throws UsageError.
std::vector<WeightRef> parse_zero_weights(const std::string& text);

// "LAYER:CHANNEL=VALUE" or "LAYER:CHANNEL=mean", several separated by commas: the residual
// stream's CHANNEL after LAYER (-1: after the embeddings) set to VALUE, or to its running mean.
// Throws UsageError.
std::vector<ResidualEdit> parse_set_activations(const std::string& text);

// The edits judged over `text` (tokenized with BOS as the vocabulary adds it): the text runs
// from position 0 in two sessions of its own length (options' passes, rounding and cache type;
// no probes), one without any edit and one with the weights zeroed and the residual edits set.
// The model's weights are left zeroed. Throws UsageError when there is no edit to judge or the
// text has fewer than two tokens or more than the model's training context.
app::TextEffect judge_over_text(Model& model, const std::string& text, const std::vector<WeightRef>& zeroed,
                                const std::vector<ResidualEdit>& residual, SessionOptions options,
                                std::vector<int32_t>* tokens_out = nullptr);

// The "effect" JSON object (README: the CLI's interventions): text, positions, perplexity_before,
// perplexity_after, mean_kl, max_kl, no_effect, kl[], moved[{position, kl, token, next}].
nlohmann::json effect_json(const Model& model, const std::vector<int32_t>& tokens, const app::TextEffect& e,
                           const std::string& path);

// The same in lines of text (the summary and the positions that moved most).
void print_effect(std::FILE* out, const Model& model, const std::vector<int32_t>& tokens, const app::TextEffect& e,
                  const std::string& path);

}  // namespace vkllm::cli
