#include "probe_json.h"

#include <algorithm>
#include <stdexcept>

#include "json_text.h"

namespace vkllm::app {

using nlohmann::json;

json model_json(const ModelInfo& info) {
    json layers = json::array();
    for (const LayerInfo& l : info.layers) {
        const AttentionInfo& a = l.attention;
        const FfnInfo& f = l.ffn;
        json attention = {{"kind", to_string(a.kind)},       {"n_head", a.n_head},   {"n_head_kv", a.n_head_kv},
                          {"head_dim", a.head_dim}, {"head_dim_v", a.head_dim_v}, {"window", a.window},
                          {"chunk", a.chunk},     {"causal", a.causal},   {"sinks", a.sinks},
                          {"softcap", a.softcap}, {"qk_norm", to_string(a.qk_norm)}, {"kv_lora_rank", a.kv_lora_rank},
                          {"rope", {{"enabled", a.rope.enabled}, {"n_dims", a.rope.n_dims},
                                    {"freq_base", a.rope.freq_base}, {"scaling", to_string(a.rope.scaling)}}}};
        json ffn = {{"kind", to_string(f.kind)},           {"activation", to_string(f.activation)}, {"n_ff", f.n_ff},
                    {"n_expert", f.n_expert},   {"top_k", f.top_k},           {"n_ff_expert", f.n_ff_expert},
                    {"n_shared_expert_ff", f.n_shared_expert_ff}, {"gating", to_string(f.gating)}};
        layers.push_back({{"index", l.index}, {"norm_placement", to_string(l.norm_placement)}, {"attention", attention}, {"ffn", ffn}});
    }
    return {{"arch", info.arch},       {"name", info.name},     {"source", info.source},
            {"n_layer", info.n_layer}, {"n_embd", info.n_embd}, {"n_vocab", info.n_vocab},
            {"n_ctx_train", info.n_ctx_train}, {"norm", to_string(info.norm)}, {"tied_embeddings", info.tied_embeddings},
            {"final_softcap", info.final_softcap}, {"parameters", info.parameters}, {"layers", layers}};
}

void ProbeDocument::AttentionRows::add(const AttentionMap& m) {
    if (probs.empty()) {
        head = m.head;
        key_first = m.key_pos.empty() ? 0 : m.key_pos.front();
        n_head = m.n_head;
        window = m.window;
        chunk = m.chunk;
        causal = m.causal;
        probs.resize(size_t(m.n_head));
        sink.resize(size_t(m.n_head));
    }
    has_sink = has_sink || !m.sink.empty();
    n_key_seen = std::max(n_key_seen, m.n_key());
    // Keys from key_first (0 but for a tile) on.
    const int n_key = m.key_pos.empty() ? 0 : *std::max_element(m.key_pos.begin(), m.key_pos.end()) + 1 - key_first;
    for (int q = 0; q < m.n_query(); ++q) {
        query_pos.push_back(m.query_pos[size_t(q)]);
        for (int h = 0; h < m.n_head; ++h) {
            std::vector<float> row(size_t(std::max(n_key, 0)), 0.0f);
            for (int k = 0; k < m.n_key(); ++k)
                if (m.key_pos[size_t(k)] >= key_first) row[size_t(m.key_pos[size_t(k)] - key_first)] = m.at(h, q, k);
            probs[size_t(h)].push_back(std::move(row));
            sink[size_t(h)].push_back(m.sink.empty() ? 0.0f : m.sink[size_t(h) * size_t(m.n_query()) + size_t(q)]);
        }
    }
}

// Every row padded to the same key axis: positions 0..the largest query or key position (a
// causal map's newest query; an encoder's last token, since its rows see keys after them).
json ProbeDocument::AttentionRows::to_json(int layer, const SidecarWriter& sidecar,
                                           uint64_t sidecar_min_values) const {
    // A head's map (maybe a tile) keeps its own key range; a layer's runs to the newest query.
    int n_key = head >= 0 ? n_key_seen
                : query_pos.empty() ? 0
                                    : *std::max_element(query_pos.begin(), query_pos.end()) + 1;
    for (const auto& h : probs)
        for (const auto& row : h) n_key = std::max(n_key, int(row.size()));
    std::vector<int> key_pos(static_cast<size_t>(n_key));
    for (int k = 0; k < n_key; ++k) key_pos[size_t(k)] = key_first + k;
    const uint64_t values = uint64_t(n_head) * query_pos.size() * uint64_t(n_key);
    json j = {{"layer", layer},   {"head", head},           {"n_head", n_head},   {"window", window},
              {"chunk", chunk},   {"causal", causal},       {"query_pos", query_pos}, {"key_pos", key_pos},
              {"probs", nullptr}, {"probs_npy", nullptr},   {"sink", has_sink ? json(sink) : json(nullptr)}};
    if (sidecar && values >= sidecar_min_values) {
        std::vector<float> flat(values, 0.0f);
        size_t i = 0;
        for (const auto& h : probs)
            for (const auto& row : h) {
                std::copy(row.begin(), row.end(), flat.begin() + long(i));
                i += size_t(n_key);
            }
        const std::string name =
            "attention-L" + std::to_string(layer) + (head >= 0 ? "-H" + std::to_string(head) : std::string());
        j["probs_npy"] = sidecar(name, {uint64_t(n_head), uint64_t(query_pos.size()), uint64_t(n_key)}, flat);
        return j;
    }
    auto padded = probs;
    for (auto& h : padded)
        for (auto& row : h) row.resize(size_t(n_key), 0.0f);
    j["probs"] = padded;
    return j;
}

std::string npy_bytes(const std::vector<uint64_t>& shape, const std::vector<float>& values) {
    std::string dims;  // "a, b, c", or "a," for one axis
    for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
    if (shape.size() == 1) dims += ",";
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
    // Magic, version, header length, then the header padded with spaces to a multiple of 64
    // bytes in all, ending in a newline.
    const size_t unpadded = 10 + header.size() + 1;
    header.append((64 - unpadded % 64) % 64, ' ');
    header += '\n';
    std::string out("\x93NUMPY\x01\x00", 8);
    out += char(header.size() & 0xff);
    out += char(header.size() >> 8);
    out += header;
    out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
    return out;
}

namespace {
// [n][k] from a flat row-major vector.
template <typename T>
json rows_of(const std::vector<T>& flat, int k) {
    json rows = json::array();
    for (size_t i = 0; k > 0 && i + size_t(k) <= flat.size(); i += size_t(k))
        rows.push_back(std::vector<T>(flat.begin() + long(i), flat.begin() + long(i) + k));
    return rows;
}
}  // namespace

void ProbeDocument::add(const ProbeResults& r, int eval) {
    for (const AttentionMap& m : r.attention) attention_[{m.layer, m.head}].add(m);
    for (const AttentionSummary& a : r.attention_summary) {
        SummarySums& s = summary_[{a.layer, a.head}];
        s.entropy += double(a.entropy) * a.rows;
        s.sink_mass += double(a.sink_mass) * a.rows;
        s.mean_distance += double(a.mean_distance) * a.rows;
        s.max_prob += double(a.max_prob) * a.rows;
        s.rows += a.rows;
    }
    for (const ResidualStat& s : r.residual) {
        json top = json::array();
        for (const ResidualEntry& e : s.top) top.push_back({{"value", e.value}, {"position", e.token}, {"channel", e.channel}});
        residual_.push_back({{"eval", eval},           {"layer", s.layer},       {"max_abs", s.max_abs},
                             {"position", s.token},    {"channel", s.channel},   {"median_abs", s.median_abs},
                             {"token_max_abs", s.token_max_abs}, {"token_channel", s.token_channel}, {"top", top}});
    }
    for (const FfnDownStat& f : r.ffn_down)
        ffn_down_.push_back({{"eval", eval},
                             {"layer", f.layer},
                             {"expert", f.expert},
                             {"in_max_abs", f.in_max_abs},
                             {"in_position", f.in_token},
                             {"in_channel", f.in_channel},
                             {"in_median_abs", f.in_median_abs},
                             {"out_max_abs", f.out_max_abs},
                             {"out_position", f.out_token},
                             {"out_channel", f.out_channel},
                             {"out_median_abs", f.out_median_abs}});
    for (const RoutingProbe& p : r.routing) {
        json& j = routing_[p.layer];
        if (j.is_null()) j = {{"layer", p.layer}, {"top_k", p.top_k}, {"positions", json::array()},
                              {"experts", json::array()}, {"weights", json::array()}};
        for (int pos : p.positions) j["positions"].push_back(pos);
        for (auto& row : rows_of(p.experts, p.top_k)) j["experts"].push_back(row);
        for (auto& row : rows_of(p.weights, p.top_k)) j["weights"].push_back(row);
    }
    for (const LogitLens& l : r.logit_lens) {
        json top = json::array();
        for (const LensToken& t : l.top) top.push_back({{"id", t.id}, {"text", t.text}, {"p", t.p}});
        logit_lens_.push_back({{"eval", eval}, {"layer", l.layer}, {"position", l.position}, {"top", top}});
    }
    if (const LogitLensGrid& g = r.logit_lens_grid; !g.empty()) {
        json ids = json::array(), probs = json::array(), text = json::array();
        for (int i = 0; i < g.rows(); ++i) {
            json ri = json::array(), rp = json::array(), rt = json::array();
            for (int c = 0; c < g.cols(); ++c) {
                const LensToken* cell = g.cell(i, c);
                json ci = json::array(), cp = json::array();
                for (int t = 0; t < g.top_k; ++t) {
                    ci.push_back(cell[t].id);
                    cp.push_back(cell[t].p);
                }
                ri.push_back(std::move(ci));
                rp.push_back(std::move(cp));
                rt.push_back(cell[0].text);
            }
            ids.push_back(std::move(ri));
            probs.push_back(std::move(rp));
            text.push_back(std::move(rt));
        }
        logit_lens_grid_.push_back({{"eval", eval}, {"layers", g.layers}, {"positions", g.positions}, {"top_k", g.top_k},
                                    {"ids", ids}, {"probs", probs}, {"text", text}});
    }
    if (!r.attention_top_k.empty() || !r.attention_thumbnails.empty())
        detail_.push_back({eval, r.attention_top_k, r.attention_thumbnails});
    timings_.insert(timings_.end(), r.timings.begin(), r.timings.end());
    passes_ += r.passes;
    dispatches_ += r.dispatches;
    barriers_ += r.barriers;
}

json ProbeDocument::to_json(const ModelInfo& info, const std::vector<DocumentToken>& tokens,
                            const SidecarWriter& sidecar, uint64_t sidecar_min_values) const {
    json doc;
    doc["model"] = model_json(info);
    doc["tokens"] = json::array();
    for (size_t i = 0; i < tokens.size(); ++i)
        doc["tokens"].push_back(
            {{"position", int(i)}, {"id", tokens[i].id}, {"text", tokens[i].text}, {"generated", tokens[i].generated}});
    doc["attention"] = json::array();
    for (const auto& [key, rows] : attention_)
        doc["attention"].push_back(rows.to_json(key.first, sidecar, sidecar_min_values));
    doc["attention_summary"] = json::array();
    for (const auto& [key, s] : summary_) {
        const double n = std::max(s.rows, 1);
        doc["attention_summary"].push_back({{"layer", key.first},
                                            {"head", key.second},
                                            {"rows", s.rows},
                                            {"entropy", float(s.entropy / n)},
                                            {"sink_mass", float(s.sink_mass / n)},
                                            {"mean_distance", float(s.mean_distance / n)},
                                            {"max_prob", float(s.max_prob / n)}});
    }
    doc["attention_top_k"] = detail_json(sidecar, sidecar_min_values, "attention_top_k");
    doc["attention_thumbnails"] = detail_json(sidecar, sidecar_min_values, "attention_thumbnails");
    doc["residual"] = residual_;
    doc["ffn_down"] = ffn_down_;
    doc["routing"] = json::array();
    for (const auto& [layer, r] : routing_) doc["routing"].push_back(r);
    doc["logit_lens"] = logit_lens_;
    doc["logit_lens_grid"] = logit_lens_grid_;
    json by_op = json::array();
    double total_ms = 0;
    for (const OpTiming& t : timings_by_op(timings_)) {
        by_op.push_back({{"op", t.op}, {"ms", t.ms}, {"count", t.count}});
        total_ms += t.ms;
    }
    // Without the timings probe there is nothing per layer either.
    doc["timings"] = {{"passes", passes_}, {"dispatches", dispatches_}, {"barriers", barriers_},
                      {"total_ms", total_ms}, {"by_op", by_op},
                      {"by_layer", timings_.empty() ? json::array() : json(timings_by_layer(timings_, info.n_layer))}};
    return doc;
}

namespace {

// [n0][n1][n2] nested arrays of a flat row-major vector.
template <typename T>
json nested3(const std::vector<T>& flat, size_t n1, size_t n2) {
    json out = json::array();
    for (size_t i = 0; n1 * n2 > 0 && i + n1 * n2 <= flat.size(); i += n1 * n2) {
        json rows = json::array();
        for (size_t r = 0; r < n1; ++r)
            rows.push_back(std::vector<T>(flat.begin() + long(i + r * n2), flat.begin() + long(i + (r + 1) * n2)));
        out.push_back(std::move(rows));
    }
    return out;
}

// One tensor of the detail: inline, or in the sidecar (as float32) when it is large enough.
template <typename T>
void put_tensor(json& j, const char* field, const std::vector<T>& flat, size_t n0, size_t n1, size_t n2,
                const SidecarWriter& sidecar, uint64_t sidecar_min_values, const std::string& name) {
    const std::string npy = std::string(field) + "_npy";
    if (sidecar && flat.size() >= sidecar_min_values) {
        j[field] = nullptr;
        j[npy] = sidecar(name, {n0, n1, n2}, std::vector<float>(flat.begin(), flat.end()));
    } else {
        j[field] = nested3(flat, n1, n2);
        j[npy] = nullptr;
    }
}

}  // namespace

// Every eval's heads in one entry each (the probes give every head of an eval the same query
// rows, and the same cells).
json ProbeDocument::detail_json(const SidecarWriter& sidecar, uint64_t sidecar_min_values, const char* field) const {
    json out = json::array();
    const bool top = std::string(field) == "attention_top_k";
    for (const Detail& d : detail_) {
        json heads = json::array();
        json j = {{"eval", d.eval}};
        const std::string name = std::string(top ? "attention-top-k" : "attention-thumbnails") + "-E" + std::to_string(d.eval);
        if (top) {
            if (d.top_k.empty()) continue;
            const AttentionTopK& first = d.top_k.front();
            std::vector<int> keys;
            std::vector<float> probs;
            for (const AttentionTopK& t : d.top_k) {
                if (t.query_pos != first.query_pos || t.k != first.k)
                    throw std::logic_error("probe document: the heads of one eval have different top-k rows");
                heads.push_back({{"layer", t.layer}, {"head", t.head}});
                keys.insert(keys.end(), t.key_pos.begin(), t.key_pos.end());
                probs.insert(probs.end(), t.probs.begin(), t.probs.end());
            }
            j["k"] = first.k;
            j["query_pos"] = first.query_pos;
            j["heads"] = heads;
            const size_t n0 = d.top_k.size(), n1 = first.query_pos.size(), n2 = size_t(first.k);
            put_tensor(j, "keys", keys, n0, n1, n2, sidecar, sidecar_min_values, name + "-keys");
            put_tensor(j, "probs", probs, n0, n1, n2, sidecar, sidecar_min_values, name + "-probs");
        } else {
            if (d.thumbnails.empty()) continue;
            const AttentionThumbnail& first = d.thumbnails.front();
            std::vector<float> cells;
            for (const AttentionThumbnail& t : d.thumbnails) {
                if (t.cell != first.cell || t.query_first != first.query_first || t.rows != first.rows ||
                    t.cols != first.cols)
                    throw std::logic_error("probe document: the heads of one eval have different thumbnail cells");
                heads.push_back({{"layer", t.layer}, {"head", t.head}});
                cells.insert(cells.end(), t.max_prob.begin(), t.max_prob.end());
            }
            j["cell"] = first.cell;
            j["query_first"] = first.query_first;
            j["rows"] = first.rows;
            j["cols"] = first.cols;
            j["heads"] = heads;
            put_tensor(j, "max_prob", cells, d.thumbnails.size(), size_t(first.rows), size_t(first.cols), sidecar,
                       sidecar_min_values, name);
        }
        out.push_back(std::move(j));
    }
    return out;
}

std::string dump_document(const json& doc) { return json_text(doc) + "\n"; }

}  // namespace vkllm::app
