// State: what the recurrent layers (Mamba-1, Mamba-2, RWKV-7, Gated DeltaNet) keep instead of a
// KV cache. For the chosen layer, each head's state norm over the tokens as lines, the decay (the
// forget gate) per head and token as a map, and for a Mamba-2 or Gated DeltaNet layer the chosen
// head's token-to-token mixing map (the layer's attention-equivalent) drawn like an attention
// map, with token labels.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <imgui.h>
#include "heatmap.h"
#include "legends.h"
#include "studio_app.h"

namespace vkllm::studio {

namespace {

// What a trace's recurrence (StateProbe::kind) is called where people read it.
const char* recurrence_label(const std::string& kind) {
    if (kind == "ssd") return "Mamba-2";
    if (kind == "selective_scan") return "Mamba-1";
    if (kind == "wkv7") return "RWKV-7";
    if (kind == "delta_net") return "Gated DeltaNet";
    return kind.c_str();
}

// The recurrent layers with their heads in the history, in layer order.
std::vector<int> state_layers(const ProbeHistory& h) {
    std::vector<int> layers;
    for (const StateHistory& s : h.state)
        if (layers.empty() || layers.back() != s.layer) layers.push_back(s.layer);
    return layers;
}

// Each head's norm over the positions as a line, on one axis from 0 to the largest norm; a
// swatch legend names the heads (the first 16).
void norm_lines(const StudioApp& app, const std::vector<const StateHistory*>& heads, float height) {
    float hi = 0;
    int n = 0;
    for (const StateHistory* s : heads) {
        for (float v : s->norm) hi = std::max(hi, v);
        n = std::max(n, int(s->norm.size()));
    }
    if (n == 0 || hi <= 0) return;
    ImGui::Text("state norm ||S||_F after each token (0 to %.3g)", double(hi));
    const float axis = ui_px(44);
    const ImVec2 p0 = ImGui::GetCursorScreenPos();
    const float w = std::max(ImGui::GetContentRegionAvail().x - axis, ui_px(60));
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 a(p0.x + axis, p0.y), b(p0.x + axis + w, p0.y + height);
    dl->AddRect(a, b, ImGui::GetColorU32(ImGuiCol_Border));
    char label[32];
    std::snprintf(label, sizeof label, "%.3g", double(hi));
    dl->AddText(ImVec2(p0.x, a.y), ImGui::GetColorU32(ImGuiCol_Text), label);
    dl->AddText(ImVec2(p0.x, b.y - ImGui::GetTextLineHeight()), ImGui::GetColorU32(ImGuiCol_Text), "0");
    const float dx = n > 1 ? w / float(n - 1) : 0.0f;
    for (size_t i = 0; i < heads.size(); ++i) {
        const StateHistory& s = *heads[i];
        const ImU32 color = expert_color(int(i), int(heads.size()));
        std::vector<ImVec2> pts;
        for (size_t t = 0; t < s.norm.size(); ++t)
            pts.emplace_back(a.x + dx * float(t), b.y - (b.y - a.y) * s.norm[t] / hi);
        if (pts.size() == 1) dl->AddCircleFilled(pts[0], ui_px(2), color);
        else dl->AddPolyline(pts.data(), int(pts.size()), color, 0, ui_px(1.5f));
    }
    ImGui::InvisibleButton("norm_lines", ImVec2(axis + w, height));
    if (ImGui::IsItemHovered() && dx > 0) {
        const int t = std::clamp(int(std::lround((ImGui::GetIO().MousePos.x - a.x) / dx)), 0, n - 1);
        std::string tip = "position " + std::to_string(heads[0]->positions[size_t(std::min<int>(t, int(heads[0]->positions.size()) - 1))]) +
                          " \"" + app.token_text(heads[0]->positions[size_t(std::min<int>(t, int(heads[0]->positions.size()) - 1))]) + "\"";
        for (const StateHistory* s : heads)
            if (t < int(s->norm.size())) {
                char line[80];
                std::snprintf(line, sizeof line, "\nhead %d: norm %.4g, decay %.4f", s->head, double(s->norm[size_t(t)]),
                              double(s->decay[size_t(t)]));
                tip += line;
            }
        ImGui::SetTooltip("%s", tip.c_str());
    }
    // The legend: one swatch per head.
    const size_t shown = std::min<size_t>(heads.size(), 16);
    for (size_t i = 0; i < shown; ++i) {
        if (i > 0) ImGui::SameLine();
        const ImVec2 c = ImGui::GetCursorScreenPos();
        const float sz = ImGui::GetTextLineHeight();
        ImGui::GetWindowDrawList()->AddRectFilled(c, ImVec2(c.x + sz, c.y + sz), expert_color(int(i), int(heads.size())));
        ImGui::Dummy(ImVec2(sz, sz));
        ImGui::SameLine();
        ImGui::Text("head %d", heads[i]->head);
    }
    if (heads.size() > shown) {
        ImGui::SameLine();
        ImGui::TextUnformatted("...");
    }
}

// The decay of every head (rows) at every position (columns), 0 to 1.
void decay_map(const StudioApp& app, const std::vector<const StateHistory*>& heads, float height) {
    int n = 0;
    for (const StateHistory* s : heads) n = std::max(n, int(s->decay.size()));
    if (n == 0) return;
    std::vector<float> values(heads.size() * size_t(n), 0.0f);
    for (size_t r = 0; r < heads.size(); ++r)
        std::copy(heads[r]->decay.begin(), heads[r]->decay.end(), values.begin() + long(r * size_t(n)));
    ImGui::TextUnformatted("decay per head and token: what the state keeps of itself at each token");
    const StateHistory& first = *heads[0];
    MapLabels labels;
    labels.row = [&](int r) { return "head " + std::to_string(heads[size_t(r)]->head); };
    labels.col = [&](int c) { return c < int(first.positions.size()) ? app.token_text(first.positions[size_t(c)]) : std::string(); };
    const float w = ImGui::GetContentRegionAvail().x;
    const HeatmapHover hv = draw_heatmap("state_decay", values.data(), int(heads.size()), n, ImVec2(w, height), 0.0f, 1.0f,
                                         nullptr, labels);
    if (hv.hovered() && hv.col < int(first.positions.size()))
        ImGui::SetTooltip("head %d, position %d \"%s\": decay %.4f", heads[size_t(hv.row)]->head,
                          first.positions[size_t(hv.col)], app.token_text(first.positions[size_t(hv.col)]).c_str(),
                          double(values[size_t(hv.row) * size_t(n) + size_t(hv.col)]));
    ramp_legend("decay", "0: forgets", "1: keeps");
}

// A Mamba-2 head's mixing map: |M[t][s]| scaled by its largest, rows the query tokens and columns
// the keys, as the Attention panel draws a head.
void mixing_map(const StudioApp& app, const AttentionHistory& m, int head, float side) {
    const int nq = int(m.query_pos.size()), nk = m.n_key;
    if (nq == 0 || nk == 0) return;
    std::vector<float> values(size_t(nq) * size_t(nk));
    float hi = 0;
    for (int q = 0; q < nq; ++q)
        for (int k = 0; k < nk; ++k) {
            const float v = std::fabs(m.at(0, q, k));
            values[size_t(q) * size_t(nk) + size_t(k)] = v;
            hi = std::max(hi, v);
        }
    ImGui::Text("head %d's mixing map |M[t][s]|: how much token s's input reaches token t's output", head);
    MapLabels labels;
    labels.row = [&](int r) { return app.token_text(m.query_pos[size_t(r)]); };
    labels.row_number = [&](int r) { return m.query_pos[size_t(r)]; };
    labels.col = [&](int c) { return app.token_text(c); };
    const HeatmapHover hv = draw_heatmap("state_mixing", values.data(), nq, nk, ImVec2(side, side), 0.0f,
                                         std::max(hi, 1e-30f), nullptr, labels);
    if (hv.hovered())
        ImGui::SetTooltip("query %d \"%s\" <- key %d \"%s\": M = %.4g", m.query_pos[size_t(hv.row)],
                          app.token_text(m.query_pos[size_t(hv.row)]).c_str(), hv.col, app.token_text(hv.col).c_str(),
                          double(m.at(0, hv.row, hv.col)));
    char top[32];
    std::snprintf(top, sizeof top, "%.3g", double(hi));
    ramp_legend("|M|, the scan's dual form (C_t.B_s) prod exp(dt A) dt_s", "0", top);
}

}  // namespace

void draw_state_panel(StudioApp& app) {
    const ImGuiViewport* vp = ImGui::GetMainViewport();
    ImGui::SetNextWindowPos(ImVec2(vp->WorkPos.x + vp->WorkSize.x * 0.1f, vp->WorkPos.y + vp->WorkSize.y * 0.05f),
                            ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowSize(ImVec2(vp->WorkSize.x * 0.8f, vp->WorkSize.y * 0.85f), ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowBgAlpha(1.0f);  // over the tiles: nothing shows through
    if (!ImGui::Begin(kStatePanelTitle, &app.state_open)) {
        ImGui::End();
        return;
    }
    const ProbeHistory& h = *app.state->probes;
    const std::vector<int> layers = state_layers(h);
    if (layers.empty()) {
        bool any = false;
        if (app.state->info)
            for (const LayerInfo& l : app.state->info->layers) any = any || has_state(l);
        ImGui::TextWrapped(any ? "Send a message: each recurrent layer's state norm and decay appear here."
                               : "This model has no recurrent layers (Mamba or RWKV-7): its memory is the KV cache.");
        ImGui::End();
        return;
    }
    if (std::find(layers.begin(), layers.end(), app.state_layer) == layers.end()) app.state_layer = layers.front();
    // The layer: a combo of the recurrent layers, each with its kind.
    std::vector<const StateHistory*> heads;
    for (const StateHistory& s : h.state)
        if (s.layer == app.state_layer) heads.push_back(&s);
    const std::string kind = heads.empty() ? "" : heads[0]->kind;
    char current[48];
    std::snprintf(current, sizeof current, "layer %d (%s)", app.state_layer, recurrence_label(kind));
    ImGui::SetNextItemWidth(ui_px(200));
    if (ImGui::BeginCombo("layer", current)) {
        for (int l : layers) {
            const StateHistory* s = nullptr;
            for (const StateHistory& x : h.state)
                if (x.layer == l) s = &x;
            char name[48];
            std::snprintf(name, sizeof name, "layer %d (%s)", l, s ? recurrence_label(s->kind) : "");
            if (ImGui::Selectable(name, l == app.state_layer)) app.state_layer = l;
        }
        ImGui::EndCombo();
    }
    ImGui::SameLine();
    ImGui::TextDisabled("%zu head%s, %zu tokens%s", heads.size(), heads.size() == 1 ? "" : "s",
                        heads.empty() ? size_t(0) : heads[0]->positions.size(),
                        kind == "selective_scan" ? "; Mamba-1 decays per channel: one head over the whole state" : "");
    if (heads.empty()) {
        ImGui::End();
        return;
    }
    const float avail = ImGui::GetContentRegionAvail().y;
    const bool map = app.state->info && app.state_layer < int(app.state->info->layers.size()) &&
                     has_state_map(app.state->info->layers[size_t(app.state_layer)]);
    norm_lines(app, heads, std::max(ui_px(80), avail * (map ? 0.22f : 0.4f)));
    decay_map(app, heads, std::max(ui_px(40), std::min(avail * 0.2f, ui_px(14) * float(heads.size()))));
    if (!map) {
        ImGui::TextDisabled("A mixing map needs a scalar decay per head (Mamba-2, Gated DeltaNet); this layer's decay is per channel.");
        ImGui::End();
        return;
    }
    const int n_maps = int(h.state_maps.size());
    int max_head = -1;
    for (int i = 0; i < n_maps; ++i)
        if (h.state_maps[size_t(i)].layer == app.state_layer) max_head = std::max(max_head, h.state_map_heads[size_t(i)]);
    if (max_head < 0) {
        ImGui::TextDisabled("The mixing maps of this layer come with the next message.");
        ImGui::End();
        return;
    }
    app.state_head = std::clamp(app.state_head, 0, max_head);
    ImGui::SetNextItemWidth(ui_px(200));
    ImGui::SliderInt("mixing map head", &app.state_head, 0, max_head);
    if (const AttentionHistory* m = h.state_map(app.state_layer, app.state_head)) {
        const float side = std::max(ui_px(120), std::min(ImGui::GetContentRegionAvail().x, ImGui::GetContentRegionAvail().y - ui_px(60)));
        mixing_map(app, *m, app.state_head, side);
    }
    ImGui::End();
}

}  // namespace vkllm::studio
