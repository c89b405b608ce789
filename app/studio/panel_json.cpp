#include "panel_json.h"

namespace vkllm::studio {

using nlohmann::json;

json attention_view_json(const AttentionView& v) {
    json a = json::array();
    for (const AttentionLayerView& l : v.layers) {
        json heads = json::array();
        for (const HeadStats& h : l.heads)
            heads.push_back({{"head", h.head}, {"entropy", h.entropy}, {"first_token_mass", h.first_token_mass},
                             {"mean_distance", h.mean_distance}, {"sink_mass", h.sink_mass}});
        a.push_back({{"layer", l.layer}, {"n_head", l.n_head}, {"kind", l.kind}, {"window", l.window},
                     {"global", l.global}, {"sinks", l.sinks}, {"n_query", l.n_query}, {"n_key", l.n_key},
                     {"heads", heads}});
    }
    return a;
}

json activation_rows_json(const std::vector<ActivationRow>& rows) {
    json a = json::array();
    for (const ActivationRow& r : rows)
        a.push_back({{"layer", r.layer}, {"max_abs", r.max_abs}, {"token", r.token}, {"channel", r.channel},
                     {"median_abs", r.median_abs}, {"ratio", r.ratio}, {"massive", r.massive}});
    return a;
}

json super_weights_json(const std::vector<SuperWeightCandidate>& c) {
    json a = json::array();
    for (const SuperWeightCandidate& s : c)
        a.push_back({{"layer", s.layer}, {"expert", s.expert}, {"token", s.token}, {"row", s.row}, {"col", s.col},
                     {"in_max_abs", s.in_max_abs}, {"out_max_abs", s.out_max_abs}, {"in_ratio", s.in_ratio},
                     {"out_ratio", s.out_ratio}, {"score", s.score}});
    return a;
}

json expert_view_json(const std::vector<ExpertLayerView>& v) {
    json a = json::array();
    for (const ExpertLayerView& l : v)
        a.push_back({{"layer", l.layer}, {"n_expert", l.n_expert}, {"shared_expert", l.shared_expert},
                     {"prompt_tokens", l.prompt_tokens}, {"generated_tokens", l.generated_tokens},
                     {"prompt_weight", l.prompt_weight}, {"generated_weight", l.generated_weight},
                     {"rolling_tokens", l.rolling_tokens}, {"cv", l.cv}, {"max_over_mean", l.max_over_mean},
                     {"entropy", l.entropy}, {"idle", l.idle}});
    return a;
}

json lens_rows_json(const std::vector<LensRow>& rows) {
    json a = json::array();
    for (const LensRow& r : rows) {
        json top = json::array();
        for (const LensToken& t : r.top) top.push_back({{"id", t.id}, {"text", t.text}, {"p", t.p}});
        a.push_back({{"layer", r.layer}, {"top", top}});
    }
    return a;
}

json architecture_json(const std::vector<ArchitectureBlock>& blocks) {
    json a = json::array();
    for (const ArchitectureBlock& b : blocks)
        a.push_back({{"layer", b.layer}, {"norm", b.norm}, {"attention", b.attention}, {"ffn", b.ffn},
                     {"attention_kind", b.attention_kind}, {"ffn_kind", b.ffn_kind}, {"window", b.window},
                     {"kv_bytes_per_token", b.kv_bytes_per_token}, {"weight_bytes", b.weight_bytes},
                     {"weight_types", b.weight_types}});
    return a;
}

json telemetry_json(const TelemetryView& t) {
    json ops = json::array();
    for (const OpRow& o : t.by_op) ops.push_back({{"op", o.op}, {"ms", o.ms}, {"count", o.count}});
    return {{"prompt_tokens_per_s", t.prompt_tokens_per_s}, {"decode_tokens_per_s", t.decode_tokens_per_s},
            {"first_token_ms", t.first_token_ms}, {"by_op", ops}, {"by_layer", t.by_layer}, {"step_ms", t.step_ms}};
}

}  // namespace vkllm::studio
