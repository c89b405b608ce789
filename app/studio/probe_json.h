// JSON of the probes (the shape `vkllm probe` writes: one object per probe kind, arrays of
// numbers as they are in ProbeResults) and of the studio's view-models (what each panel draws).
#pragma once

#include <nlohmann/json.hpp>

#include "view_models.h"
#include "vkllm/probe.h"

namespace vkllm::studio {

nlohmann::json probe_results_json(const ProbeResults& r);

// Every panel's numbers, as drawn.
nlohmann::json attention_view_json(const AttentionView& v);
nlohmann::json activation_rows_json(const std::vector<ActivationRow>& rows);
nlohmann::json super_weights_json(const std::vector<SuperWeightCandidate>& c);
nlohmann::json expert_view_json(const std::vector<ExpertLayerView>& v);
nlohmann::json lens_rows_json(const std::vector<LensRow>& rows);
nlohmann::json architecture_json(const std::vector<ArchitectureBlock>& blocks);
nlohmann::json telemetry_json(const TelemetryView& t);

}  // namespace vkllm::studio
