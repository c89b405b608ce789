#include "studio_export.h"

#include <algorithm>
#include <sstream>

#include "panel_json.h"
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

namespace {
// The context's tokens as the document lists them: a token is generated when an assistant turn
// still in the context sampled it at that position.
std::vector<app::DocumentToken> document_tokens(const WorkerState& s) {
    std::vector<app::DocumentToken> tokens;
    for (size_t i = 0; i < s.context.size(); ++i)
        tokens.push_back({s.context[i], i < s.context_pieces.size() ? s.context_pieces[i] : std::string(), false});
    for (const ChatTurn& t : s.messages)
        for (const TokenEvent& e : t.tokens)
            if (e.position >= 0 && size_t(e.position) < tokens.size() && tokens[size_t(e.position)].id == e.id)
                tokens[size_t(e.position)].generated = true;
    return tokens;
}
}  // namespace

namespace {
// The State window's numbers under `vkllm probe`'s keys (docs/api.md): `state`, each recurrent
// layer's head with its state norm and decay at every kept position, and `state_maps`, the
// Mamba-2 heads' token-to-token mixing maps (rows by query position, keys from 0).
void add_state(json& j, const ProbeHistory& h) {
    json state = json::array();
    for (const StateHistory& t : h.state)
        state.push_back({{"layer", t.layer}, {"head", t.head}, {"kind", t.kind}, {"positions", t.positions},
                         {"norm", t.norm}, {"decay", t.decay}});
    j["state"] = std::move(state);
    json maps = json::array();
    for (size_t i = 0; i < h.state_maps.size(); ++i) {
        const AttentionHistory& m = h.state_maps[i];
        const int head = i < h.state_map_heads.size() ? h.state_map_heads[i] : 0;
        std::vector<int> key_pos(size_t(std::max(m.n_key, 0)));
        for (int k = 0; k < m.n_key; ++k) key_pos[size_t(k)] = k;
        json rows = json::array();
        for (size_t q = 0; q < m.query_pos.size(); ++q) {
            std::vector<float> row(size_t(std::max(m.n_key, 0)));
            for (int k = 0; k < m.n_key; ++k) row[size_t(k)] = m.at(0, int(q), k);
            rows.push_back(std::move(row));
        }
        maps.push_back({{"layer", m.layer}, {"head", head}, {"kind", "state_mixing"}, {"query_pos", m.query_pos},
                        {"key_pos", key_pos}, {"values", std::move(rows)}});
    }
    j["state_maps"] = std::move(maps);
}
}  // namespace

json export_json(const WorkerState& s, const ViewModels& v) {
    // The probes: `vkllm probe`'s document, one eval per step the worker ran.
    app::ProbeDocument doc;
    int eval = 0;
    for (const auto& e : s.probes->evals) doc.add(e->results, eval++);
    json j = s.info ? doc.to_json(*s.info, document_tokens(s)) : json{{"model", nullptr}, {"tokens", json::array()}};
    // The studio's own keys beside it.
    json turns = json::array();
    for (const ChatTurn& t : s.messages) turns.push_back({{"role", t.role}, {"text", t.text}});
    j["messages"] = turns;
    const bool answered = !s.messages.empty() && s.messages.back().role == "assistant";
    j["generated_text"] = answered ? s.messages.back().text : "";
    j["stop_reason"] = s.encoder ? "none: an encoder generates nothing" : to_string(s.last_result.reason);
    if (s.encoder && s.encoded.valid) {
        json predictions = json::array();
        for (const auto& top : s.encoded.predictions) {
            json row = json::array();
            for (const TokenAlternative& t : top) row.push_back({{"id", t.id}, {"piece", t.piece}, {"logprob", t.logprob}});
            predictions.push_back(row);
        }
        j["encoder"] = {{"pooling", s.encoded.pooling}, {"embedding", s.encoded.embedding},
                        {"embedding_norm", s.encoded.embedding_norm}, {"masked", s.encoded.masked},
                        {"predictions", predictions}};
    }
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
    if (s.intervention.valid) {
        const TextEffect& t = s.intervention.text;
        nlohmann::json moved = nlohmann::json::array();
        for (const PositionShift& m : t.moved) moved.push_back({{"position", m.position}, {"kl", m.kl}});
        j["intervention"] = {{"description", s.intervention.description}, {"before", tops(s.intervention.before)},
                             {"after", tops(s.intervention.after)}, {"kl", s.intervention.kl},
                             {"in_force", s.interventions},
                             {"text", {{"positions", t.positions}, {"kl", t.kl}, {"mean_kl", t.mean_kl},
                                       {"max_kl", t.max_kl}, {"perplexity_before", t.perplexity_before},
                                       {"perplexity_after", t.perplexity_after}, {"moved", moved},
                                       {"no_effect", t.no_effect()}}}};
    }
    if (s.probe_cost.valid)
        j["probe_cost"] = {{"prompt_tokens", s.probe_cost.prompt_tokens}, {"prompt_ms_off", s.probe_cost.prompt_ms_off},
                           {"prompt_ms_on", s.probe_cost.prompt_ms_on}, {"decode_ms_off", s.probe_cost.decode_ms_off},
                           {"decode_ms_on", s.probe_cost.decode_ms_on}};
    add_state(j, *s.probes);
    j["memory"] = {{"weights", s.weight_bytes}, {"kv_cache", s.kv_bytes}, {"scratch", s.scratch_bytes},
                   {"probes", s.probe_bytes}, {"recurrent_state", s.state_bytes},
                   {"state_snapshots", s.snapshot_bytes}};
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
