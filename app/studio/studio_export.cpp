#include "studio_export.h"

#include "probe_json.h"

namespace vkllm::studio {

using nlohmann::json;

ViewModels compute_view_models(const WorkerState& s, int rolling_window) {
    ViewModels v;
    v.version = s.version;
    if (!s.info) return v;
    const ProbeHistory& h = *s.probes;
    v.attention = attention_view(h, *s.info);
    v.activations = activation_rows(h);
    v.super_weights = super_weight_candidates(h.ffn_down);
    v.experts = expert_view(h, *s.info, rolling_window);
    v.lens = lens_rows(h);
    v.architecture = architecture_blocks(*s.info);
    v.telemetry = telemetry_view(h, s.last_result, s.info->n_layer);
    return v;
}

json export_json(const WorkerState& s, const ViewModels& v) {
    json j;
    j["model"] = s.info ? json{{"arch", s.info->arch}, {"name", s.info->name}, {"source", s.info->source},
                               {"n_layer", s.info->n_layer}, {"n_embd", s.info->n_embd}}
                        : json();
    j["tokens"] = s.context;
    j["pieces"] = s.context_pieces;
    json turns = json::array();
    for (const ChatTurn& t : s.messages) turns.push_back({{"role", t.role}, {"text", t.text}});
    j["messages"] = turns;
    j["generated_text"] = s.messages.empty() ? "" : s.messages.back().text;
    j["stop_reason"] = to_string(s.last_result.reason);
    j["probes"] = probe_results_json(s.probes->as_results());
    j["viewmodel"] = {{"attention", attention_view_json(v.attention)},
                      {"activations", activation_rows_json(v.activations)},
                      {"super_weights", super_weights_json(v.super_weights)},
                      {"experts", expert_view_json(v.experts)},
                      {"lens", lens_rows_json(v.lens)},
                      {"architecture", architecture_json(v.architecture)},
                      {"telemetry", telemetry_json(v.telemetry)}};
    j["memory"] = {{"weights", s.weight_bytes}, {"kv_cache", s.kv_bytes}, {"scratch", s.scratch_bytes},
                   {"probes", s.probe_bytes}};
    return j;
}

}  // namespace vkllm::studio
