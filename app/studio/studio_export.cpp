#include "studio_export.h"

#include <sstream>

#include "probe_json.h"
#include "settings.h"

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
    auto tops = [](const std::vector<TokenAlternative>& v) {
        json a = json::array();
        for (const TokenAlternative& t : v) a.push_back({{"id", t.id}, {"piece", t.piece}, {"logprob", t.logprob}});
        return a;
    };
    if (s.intervention.valid)
        j["intervention"] = {{"description", s.intervention.description}, {"before", tops(s.intervention.before)},
                             {"after", tops(s.intervention.after)}, {"kl", s.intervention.kl},
                             {"in_force", s.interventions}};
    if (s.probe_cost.valid)
        j["probe_cost"] = {{"prompt_tokens", s.probe_cost.prompt_tokens}, {"prompt_ms_off", s.probe_cost.prompt_ms_off},
                           {"prompt_ms_on", s.probe_cost.prompt_ms_on}, {"decode_ms_off", s.probe_cost.decode_ms_off},
                           {"decode_ms_on", s.probe_cost.decode_ms_on}};
    j["memory"] = {{"weights", s.weight_bytes}, {"kv_cache", s.kv_bytes}, {"scratch", s.scratch_bytes},
                   {"probes", s.probe_bytes}};
    return j;
}

namespace {
// A CSV field: quoted when it holds a comma, a quote or a line break.
std::string field(const std::string& t) {
    if (t.find_first_of(",\"\n\r") == std::string::npos) return t;
    std::string q = "\"";
    for (char c : t) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}
}  // namespace

std::string panel_csv(int panel, const WorkerState& s, const ViewModels& v) {
    std::ostringstream o;
    switch (panel) {
        case PanelChat:
            o << "turn,role,index,position,id,piece,logprob\n";
            for (size_t t = 0; t < s.messages.size(); ++t)
                for (const TokenEvent& e : s.messages[t].tokens)
                    o << t << "," << s.messages[t].role << "," << e.index << "," << e.position << "," << e.id << ","
                      << field(e.piece) << "," << e.logprob << "\n";
            break;
        case PanelAttention:
            o << "layer,head,kind,window,entropy,first_token_mass,mean_distance,sink_mass\n";
            for (const AttentionLayerView& l : v.attention.layers)
                for (const HeadStats& h : l.heads)
                    o << l.layer << "," << h.head << "," << l.kind << "," << l.window << "," << h.entropy << ","
                      << h.first_token_mass << "," << h.mean_distance << "," << h.sink_mass << "\n";
            break;
        case PanelActivations:
            o << "layer,max_abs,token,channel,median_abs,ratio,massive\n";
            for (const ActivationRow& r : v.activations)
                o << r.layer << "," << r.max_abs << "," << r.token << "," << r.channel << "," << r.median_abs << ","
                  << r.ratio << "," << (r.massive ? 1 : 0) << "\n";
            break;
        case PanelExperts:
            o << "layer,expert,prompt_tokens,generated_tokens,prompt_weight,generated_weight\n";
            for (const ExpertLayerView& l : v.experts)
                for (int e = 0; e < l.n_expert; ++e)
                    o << l.layer << "," << e << "," << l.prompt_tokens[size_t(e)] << "," << l.generated_tokens[size_t(e)]
                      << "," << l.prompt_weight[size_t(e)] << "," << l.generated_weight[size_t(e)] << "\n";
            break;
        case PanelLens:
            o << "layer,rank,id,text,p\n";
            for (const LensRow& r : v.lens)
                for (size_t i = 0; i < r.top.size(); ++i)
                    o << r.layer << "," << i << "," << r.top[i].id << "," << field(r.top[i].text) << "," << r.top[i].p << "\n";
            break;
        case PanelArchitecture:
            o << "layer,norm,attention,ffn,kv_bytes_per_token,weight_bytes,weight_types\n";
            for (const ArchitectureBlock& b : v.architecture)
                o << b.layer << "," << b.norm << "," << field(b.attention) << "," << field(b.ffn) << ","
                  << b.kv_bytes_per_token << "," << b.weight_bytes << "," << field(b.weight_types) << "\n";
            break;
        case PanelTelemetry:
            o << "op,ms,count\n";
            for (const OpRow& r : v.telemetry.by_op) o << field(r.op) << "," << r.ms << "," << r.count << "\n";
            break;
        default: throw std::invalid_argument("panel_csv: no panel " + std::to_string(panel));
    }
    return o.str();
}

}  // namespace vkllm::studio
