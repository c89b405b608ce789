// Every panel's numbers for one worker state, and the export: `vkllm probe`'s document (model,
// tokens, attention, residual, ffn_down, routing, logit_lens, timings: app/common/probe_json.h)
// with the studio's own keys beside it (messages, generated_text, stop_reason, viewmodel, ...).
#pragma once

#include <nlohmann/json.hpp>

#include "engine_worker.h"
#include "view_models.h"

namespace vkllm::studio {

// Every panel's numbers for one worker state.
struct ViewModels {
    uint64_t version = ~0ull;
    AttentionView attention;
    std::vector<ActivationRow> activations;
    std::vector<SuperWeightCandidate> super_weights;
    std::vector<ExpertLayerView> experts;
    std::vector<LensRow> lens;
    std::vector<ArchitectureBlock> architecture;
    TelemetryView telemetry;
};
ViewModels compute_view_models(const WorkerState& s, int rolling_window);
// The export: `vkllm probe`'s document of every kept eval, plus the conversation and every
// panel's numbers.
nlohmann::json export_json(const WorkerState& s, const ViewModels& v);
// One panel's numbers as CSV (a header line, then one row per item); `panel` is a PanelId.
std::string panel_csv(int panel, const WorkerState& s, const ViewModels& v);

}  // namespace vkllm::studio
