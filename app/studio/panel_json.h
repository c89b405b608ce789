// JSON of the studio's view-models: every panel's numbers as drawn (the export's "viewmodel";
// the probes themselves are exported in `vkllm probe`'s shape, app/common/probe_json.h).
#pragma once

#include <nlohmann/json.hpp>

#include "view_models.h"

namespace vkllm::studio {

nlohmann::json attention_view_json(const AttentionView& v);
nlohmann::json activation_rows_json(const std::vector<ActivationRow>& rows);
nlohmann::json super_weights_json(const std::vector<SuperWeightCandidate>& c);
nlohmann::json expert_view_json(const std::vector<ExpertLayerView>& v);
nlohmann::json lens_rows_json(const std::vector<LensRow>& rows);
nlohmann::json architecture_json(const std::vector<ArchitectureBlock>& blocks);
nlohmann::json telemetry_json(const TelemetryView& t);

}  // namespace vkllm::studio
