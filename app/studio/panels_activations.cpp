// Activations: per layer the largest |x| with its token and channel and the ratio to the
// median (massive activations flagged), a token x channel map of the selected layer, the
// super-weight candidates, and interventions with the next-token distribution before/after.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <cmath>
#include <cstdio>
#include <string>

#include "heatmap.h"
#include <imgui.h>
#include "panel_frame.h"
#include "studio_app.h"

namespace vkllm::studio {

namespace {

// The edit over the whole conversation: per-position KL, the text's perplexity before and
// after, and the positions that moved most (or that nothing moved).
void text_effect_lines(const StudioApp& app, const TextEffect& e) {
    if (e.positions == 0) return;
    if (e.no_effect()) {
        ImGui::TextWrapped("no effect over %d tokens (every position's KL below %.0e nats; perplexity %.4f)", e.positions,
                           double(TextEffect::kNoEffect), e.perplexity_before);
        return;
    }
    ImGui::TextWrapped("over %d tokens: KL mean %.4f, max %.4f nats; perplexity of the text %.4f -> %.4f (%+.2f%%)",
                       e.positions, e.mean_kl, e.max_kl, e.perplexity_before, e.perplexity_after,
                       e.perplexity_before > 0 ? 100.0 * (e.perplexity_after / e.perplexity_before - 1.0) : 0.0);
    std::string moved;
    for (const PositionShift& p : e.moved) {
        std::string piece = app.token_text(p.position);
        std::replace(piece.begin(), piece.end(), '\n', ' ');
        if (piece.size() > 12) piece = piece.substr(0, 12) + "...";
        char text[96];
        std::snprintf(text, sizeof text, "%s%d \"%s\" %.3f", moved.empty() ? "" : ",  ", p.position, piece.c_str(), p.kl);
        moved += text;
    }
    ImGui::TextWrapped("moved most (position, token, KL): %s", moved.c_str());
    // Per-position KL as a strip, one cell per token.
    const float w = ImGui::GetContentRegionAvail().x;
    const HeatmapHover hv = draw_heatmap("text_kl", e.kl.data(), 1, e.positions, ImVec2(w, ui_px(12)), 0.0f,
                                         std::max(e.max_kl, 1e-6f));
    if (hv.hovered() && hv.col < e.positions)
        ImGui::SetTooltip("position %d \"%s\": KL %.5f nats", hv.col, app.token_text(hv.col).c_str(),
                          e.kl[size_t(hv.col)]);
}

void distribution_columns(const StudioApp& app, const InterventionResult& r) {
    ImGui::TextWrapped("%s: next token KL(before || after) = %.4f nats", r.description.c_str(), r.kl);
    text_effect_lines(app, r.text);
    if (!ImGui::BeginTable("before_after", 4, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingStretchProp)) return;
    ImGui::TableSetupColumn("before");
    ImGui::TableSetupColumn("p");
    ImGui::TableSetupColumn("after");
    ImGui::TableSetupColumn("p ");
    ImGui::TableHeadersRow();
    for (size_t i = 0; i < std::max(r.before.size(), r.after.size()); ++i) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        if (i < r.before.size()) ImGui::TextUnformatted(r.before[i].piece.c_str());
        ImGui::TableNextColumn();
        if (i < r.before.size()) ImGui::Text("%.4f", std::exp(r.before[i].logprob));
        ImGui::TableNextColumn();
        if (i < r.after.size()) ImGui::TextUnformatted(r.after[i].piece.c_str());
        ImGui::TableNextColumn();
        if (i < r.after.size()) ImGui::Text("%.4f", std::exp(r.after[i].logprob));
    }
    end_table();
}

}  // namespace

void draw_activations_panel(StudioApp& app) {
    if (!begin_panel(app, PanelActivations)) {
        end_panel();
        return;
    }
    const WorkerState& s = *app.state;
    const ProbeHistory& h = *s.probes;
    const std::vector<ActivationRow>& rows = app.vm.activations;
    if (rows.empty()) {
        ImGui::TextDisabled("Send a message: the residual stream's largest values per layer appear here.");
        end_panel();
        return;
    }
    // Per layer: max |x| (log scale bars).
    std::vector<float> log_max;
    for (const ActivationRow& r : rows) log_max.push_back(std::log10(std::max(r.max_abs, 1e-6f)));
    const float top = std::max(4.0f, *std::max_element(log_max.begin(), log_max.end()));
    ImGui::TextDisabled("log10 max|x| per layer (bars from -1 to %.0f; embeddings first)", top);
    ImGui::PlotHistogram("##maxabs", log_max.data(), int(log_max.size()), 0, nullptr, -1.0f, top, ImVec2(std::max(ImGui::GetContentRegionAvail().x, 1.0f), ui_px(50)));
    if (s.encoder)  // BERT normalises after each residual sum: the stream the next layer reads
        ImGui::TextDisabled("the post-norm residual stream: each layer's output after its LayerNorm(x + f(x))");
    const bool any_massive = std::any_of(rows.begin(), rows.end(), [](const ActivationRow& r) { return r.massive; });
    ImGui::TextDisabled(any_massive ? "massive activations (> 100 and > 1000x the median) in red"
                                    : "no massive activations (> 100 and > 1000x the median)");
    if (begin_data_table("layers", 7, int(rows.size()), 6)) {
        for (const char* c : {"layer", "max |x|", "token", "channel", "median", "ratio", ""}) ImGui::TableSetupColumn(c);
        ImGui::TableHeadersRow();
        for (const ActivationRow& r : rows) {
            ImGui::PushID(r.layer + 1);
            ImGui::TableNextRow();
            if (r.massive) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(160, 40, 40, 120));
            ImGui::TableNextColumn();
            if (ImGui::Selectable(r.layer < 0 ? "emb" : std::to_string(r.layer).c_str(), r.layer == app.sel_layer,
                                  ImGuiSelectableFlags_SpanAllColumns | ImGuiSelectableFlags_AllowItemOverlap))
                app.sel_layer = std::max(r.layer, 0);
            ImGui::TableNextColumn();
            ImGui::Text("%.2f", r.max_abs);
            ImGui::TableNextColumn();
            ImGui::Text("%d \"%s\"", r.token, app.token_text(r.token).c_str());
            ImGui::TableNextColumn();
            ImGui::Text("%d", r.channel);
            ImGui::TableNextColumn();
            ImGui::Text("%.3f", r.median_abs);
            ImGui::TableNextColumn();
            ImGui::Text("%.0fx", r.ratio);
            ImGui::TableNextColumn();
            if (!s.busy && ImGui::SmallButton("set to mean")) app.worker.set_activation_to_mean(r.layer, r.channel);
            ImGui::PopID();
        }
        end_data_table();
    }

    // Token x channel |x| of the selected layer.
    for (const ResidualTensor& t : h.residual_full) {
        if (t.layer != app.sel_layer || t.positions.empty()) continue;
        const int n = int(t.positions.size());
        // |x| of the layer, made once per published state and layer: at 2K tokens x 2K channels
        // it is 4M values, too many to redo every frame.
        static std::vector<float> a;
        static float mx = 0;
        static std::pair<uint64_t, int> made{~uint64_t(0), -1};
        if (made != std::make_pair(app.state->version, t.layer)) {
            a.resize(t.values.size());
            mx = 0;
            for (size_t i = 0; i < a.size(); ++i) mx = std::max(mx, a[i] = std::fabs(t.values[i]));
            made = {app.state->version, t.layer};
        }
        ImGui::Text("layer %d: |x| tokens (rows, positions %d..%d) x channels (%d), max %.2f", t.layer, t.positions.front(),
                    t.positions.back(), t.n_embd, mx);
        // Rows named by their tokens, columns by channel index (heatmap.h's labels).
        const HeatmapHover hv = draw_heatmap(
            "tokch", a.data(), n, t.n_embd,
            ImVec2(ImGui::GetContentRegionAvail().x - ui_px(72), std::clamp(4.0f * n, 40.0f, 160.0f)), 0.0f,
            std::max(mx, 1e-6f), nullptr,
            MapLabels{[&](int r) { return app.token_text(t.positions[size_t(r)]); }, [](int c) { return std::to_string(c); },
                      [&](int r) { return t.positions[size_t(r)]; }});
        if (hv.hovered())
            ImGui::SetTooltip("token %d \"%s\" channel %d: %.3f", t.positions[size_t(hv.row)],
                              app.token_text(t.positions[size_t(hv.row)]).c_str(), hv.col,
                              t.values[size_t(hv.row) * size_t(t.n_embd) + size_t(hv.col)]);
    }

    // Super-weight candidates (Yu et al. 2024).
    if (ImGui::CollapsingHeader("Super-weight candidates (ffn_down spike pairs)", ImGuiTreeNodeFlags_DefaultOpen)) {
        if (app.vm.super_weights.empty()) ImGui::TextDisabled("no ffn_down input/output spike on one token yet");
        else if (begin_data_table("sw", 6, int(std::min<size_t>(app.vm.super_weights.size(), 8)), 8)) {
            for (const char* c : {"layer", "W_down[row, col]", "token", "in ratio", "out ratio", ""}) ImGui::TableSetupColumn(c);
            ImGui::TableHeadersRow();
            int shown = 0;
            for (const SuperWeightCandidate& c : app.vm.super_weights) {
                if (++shown > 6) break;
                ImGui::PushID(shown);
                ImGui::TableNextRow();
                ImGui::TableNextColumn();
                ImGui::Text(c.expert >= 0 ? "%d e%d" : "%d", c.layer, c.expert);
                ImGui::TableNextColumn();
                ImGui::Text("[%d, %d]", c.row, c.col);
                ImGui::TableNextColumn();
                ImGui::Text("%d", c.token);
                ImGui::TableNextColumn();
                ImGui::Text("%.0fx", c.in_ratio);
                ImGui::TableNextColumn();
                ImGui::Text("%.0fx", c.out_ratio);
                ImGui::TableNextColumn();
                if (!s.busy && ImGui::SmallButton("zero")) {
                    WeightRef w;
                    w.layer = c.layer;
                    w.row = c.row;
                    w.col = c.col;
                    w.expert = c.expert;
                    const bool moe = s.info && c.layer < int(s.info->layers.size()) &&
                                     s.info->layers[size_t(c.layer)].ffn.kind == FfnKind::Moe;
                    w.tensor = !moe ? "ffn_down" : c.expert >= 0 ? "ffn_down_exps" : "ffn_down_shexp";
                    app.worker.zero_weight(w);
                }
                ImGui::PopID();
            }
            end_data_table();
        }
    }
    if (!s.interventions.empty() || s.intervention.valid) {
        ImGui::Separator();
        for (const std::string& i : s.interventions) bullet_text("%s", i.c_str());
        if (!s.interventions.empty() && ImGui::Button("Restore")) app.worker.restore_interventions();
        if (s.intervention.valid) distribution_columns(app, s.intervention);
    }
    end_panel();
}

}  // namespace vkllm::studio
