// Every panel's numbers for one worker state, and the export: the model, the tokens, the text,
// the probes in `vkllm probe`'s shape and the view-models.
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
// The export: model, tokens, text, the probes in `vkllm probe`'s shape and every panel's numbers.
nlohmann::json export_json(const WorkerState& s, const ViewModels& v);
// One panel's numbers as CSV (a header line, then one row per item); `panel` is a PanelId.
std::string panel_csv(int panel, const WorkerState& s, const ViewModels& v);

}  // namespace vkllm::studio
