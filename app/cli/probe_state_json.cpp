// The recurrent-state part of the `vkllm probe` document (probe_state_json.h).
#include "probe_state_json.h"

#include <algorithm>

namespace vkllm::cli {

void StateDocument::add(const ProbeResults& r) {
    for (const StateProbe& p : r.state) {
        Trace& t = traces_[{p.layer, p.head}];
        t.kind = p.kind;
        t.positions.insert(t.positions.end(), p.positions.begin(), p.positions.end());
        t.norm.insert(t.norm.end(), p.norm.begin(), p.norm.end());
        t.decay.insert(t.decay.end(), p.decay.begin(), p.decay.end());
    }
    if (maps_.size() < r.state_maps.size()) maps_.resize(r.state_maps.size());
    for (size_t i = 0; i < r.state_maps.size(); ++i) {
        const AttentionMap& m = r.state_maps[i];
        auto& [id, rows] = maps_[i];
        id = {m.layer, m.head};
        if (m.n_key() > 0) {
            if (rows.query_pos.empty()) rows.key_first = m.key_pos.front();
            rows.n_key = std::max(rows.n_key, m.key_pos.back() + 1 - rows.key_first);
        }
        for (int q = 0; q < m.n_query(); ++q) {
            rows.query_pos.push_back(m.query_pos[size_t(q)]);
            std::vector<float> row(size_t(std::max(rows.n_key, 0)), 0.0f);
            for (int k = 0; k < m.n_key(); ++k) {
                const int at = m.key_pos[size_t(k)] - rows.key_first;
                if (at >= 0 && at < rows.n_key) row[size_t(at)] = m.at(0, q, k);
            }
            rows.rows.push_back(std::move(row));
        }
    }
}

void StateDocument::write(nlohmann::json& doc, const app::SidecarWriter& sidecar, uint64_t sidecar_min_values) const {
    size_t longest = 0;
    for (const auto& [id, t] : traces_) longest = std::max(longest, t.norm.size());
    const bool npy = sidecar && !traces_.empty() && uint64_t(traces_.size()) * longest * 2 >= sidecar_min_values;
    nlohmann::json state = nlohmann::json::array();
    std::vector<float> norm, decay;  // [entry][longest] for the sidecar (short traces padded with 0)
    int row = 0;
    for (const auto& [id, t] : traces_) {
        nlohmann::json e = {{"layer", id.first}, {"head", id.second}, {"kind", t.kind}, {"positions", t.positions}};
        if (npy) {
            e["norm"] = nullptr, e["decay"] = nullptr, e["npy_row"] = row++;
            norm.insert(norm.end(), t.norm.begin(), t.norm.end());
            norm.resize(size_t(row) * longest, 0.0f);
            decay.insert(decay.end(), t.decay.begin(), t.decay.end());
            decay.resize(size_t(row) * longest, 0.0f);
        } else {
            e["norm"] = t.norm, e["decay"] = t.decay, e["npy_row"] = nullptr;
        }
        state.push_back(std::move(e));
    }
    doc["state"] = std::move(state);
    if (npy) {
        const std::vector<uint64_t> shape = {uint64_t(traces_.size()), uint64_t(longest)};
        doc["state_npy"] = {{"norm", sidecar("state-norm", shape, norm)}, {"decay", sidecar("state-decay", shape, decay)}};
    }
    nlohmann::json maps = nlohmann::json::array();
    for (const auto& [id, m] : maps_) {
        std::vector<int> key_pos;
        for (int k = 0; k < m.n_key; ++k) key_pos.push_back(m.key_first + k);
        nlohmann::json e = {{"layer", id.first}, {"head", id.second}, {"kind", "state_mixing"},
                            {"query_pos", m.query_pos}, {"key_pos", key_pos}};
        const uint64_t values = uint64_t(m.query_pos.size()) * uint64_t(m.n_key);
        if (sidecar && values > 0 && values >= sidecar_min_values) {
            std::vector<float> flat;
            for (const auto& r : m.rows) {
                flat.insert(flat.end(), r.begin(), r.end());
                flat.resize(flat.size() + (size_t(m.n_key) - r.size()), 0.0f);
            }
            e["values"] = nullptr;
            e["values_npy"] = sidecar("state-map-L" + std::to_string(id.first) + "-H" + std::to_string(id.second),
                                      {uint64_t(m.query_pos.size()), uint64_t(m.n_key)}, flat);
        } else {
            nlohmann::json rows = nlohmann::json::array();
            for (const auto& r : m.rows) {
                std::vector<float> full = r;
                full.resize(size_t(m.n_key), 0.0f);
                rows.push_back(full);
            }
            e["values"] = std::move(rows);
            e["values_npy"] = nullptr;
        }
        maps.push_back(std::move(e));
    }
    doc["state_maps"] = std::move(maps);
}

}  // namespace vkllm::cli
