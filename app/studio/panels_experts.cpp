// Experts: per MoE layer the tokens and gate weight per expert (prompt and generation apart,
// rolling and cumulative), a layer x expert heatmap, balance metrics, the shared expert, and
// the hovered token's path through the layers.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

#include "heatmap.h"
#include "legends.h"
#include <imgui.h>
#include "panel_frame.h"
#include "studio_app.h"

namespace vkllm::studio {

void draw_experts_panel(StudioApp& app) {
    if (!begin_panel(app, PanelExperts)) {
        end_panel();
        return;
    }
    const WorkerState& s = *app.state;
    const std::vector<ExpertLayerView>& layers = app.vm.experts;
    bool moe = false;
    if (s.info)
        for (const LayerInfo& l : s.info->layers) moe = moe || l.ffn.kind == FfnKind::Moe;
    if (!moe) {
        ImGui::TextDisabled("This model has no mixture-of-experts layers.");
        end_panel();
        return;
    }
    if (layers.empty()) {
        ImGui::TextDisabled("Send a message: each MoE layer's routing appears here.");
        end_panel();
        return;
    }
    // Layer x expert heatmap of all tokens' pairs, normalised per layer.
    int n_expert = 0;
    for (const ExpertLayerView& l : layers) n_expert = std::max(n_expert, l.n_expert);
    std::vector<float> grid(layers.size() * size_t(n_expert), 0.0f);
    for (size_t i = 0; i < layers.size(); ++i) {
        int mx = 1;
        for (int e = 0; e < layers[i].n_expert; ++e)
            mx = std::max(mx, layers[i].prompt_tokens[size_t(e)] + layers[i].generated_tokens[size_t(e)]);
        for (int e = 0; e < layers[i].n_expert; ++e)
            grid[i * size_t(n_expert) + size_t(e)] =
                float(layers[i].prompt_tokens[size_t(e)] + layers[i].generated_tokens[size_t(e)]) / float(mx);
    }
    ImGui::Text("load: MoE layers (rows) x experts (columns), each row by its busiest expert");
    // Rows named by layer ("L3" where a line fits, the number every few rows otherwise), columns
    // by expert number where they fit; both follow the zoom.
    MapLabels labels;
    labels.row = [&layers](int i) { return "L" + std::to_string(layers[size_t(i)].layer); };
    labels.row_number = [&layers](int i) { return layers[size_t(i)].layer; };
    labels.col = [](int e) { return std::to_string(e); };
    labels.row_margin = ImGui::CalcTextSize("layer").x + ui_px(8);
    const float w = std::max(ui_px(40), std::min(ImGui::GetContentRegionAvail().x - labels.row_margin - ui_px(4),
                                                 ui_px(28) * float(n_expert)));
    const float map_h = std::min(ui_px(16) * float(layers.size()), ui_px(120));
    map_axis_titles("layer", "expert", labels.row_margin);
    const HeatmapHover hv = draw_heatmap("load", grid.data(), int(layers.size()), n_expert, ImVec2(w, map_h), 0.0f, 1.0f,
                                         nullptr, labels);
    if (hv.hovered()) {
        const ExpertLayerView& l = layers[size_t(hv.row)];
        const int prompt = hv.col < l.n_expert ? l.prompt_tokens[size_t(hv.col)] : 0;
        const int generated = hv.col < l.n_expert ? l.generated_tokens[size_t(hv.col)] : 0;
        ImGui::SetTooltip("layer %d expert %d: %d prompt + %d generated pairs\n%.0f%% of the layer's busiest expert\n"
                          "(click: select this layer)",
                          l.layer, hv.col, prompt, generated, 100.0 * grid[size_t(hv.row) * size_t(n_expert) + size_t(hv.col)]);
        if (ImGui::IsItemClicked()) app.sel_layer = l.layer;
    }
    ramp_legend("pairs", "0", "busiest");
    // Balance table.
    if (begin_data_table("balance", 6, int(layers.size()), 6)) {
        for (const char* c : {"layer", "CV", "max/mean", "entropy", "idle", "shared"}) ImGui::TableSetupColumn(c);
        ImGui::TableHeadersRow();
        for (const ExpertLayerView& l : layers) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            if (ImGui::Selectable(std::to_string(l.layer).c_str(), l.layer == app.sel_layer, ImGuiSelectableFlags_SpanAllColumns))
                app.sel_layer = l.layer;
            ImGui::TableNextColumn();
            ImGui::Text("%.2f", l.cv);
            ImGui::TableNextColumn();
            ImGui::Text("%.2f", l.max_over_mean);
            ImGui::TableNextColumn();
            ImGui::Text("%.2f", l.entropy);
            ImGui::TableNextColumn();
            ImGui::Text("%d/%d", l.idle, l.n_expert);
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(l.shared_expert ? "yes" : "-");
        }
        end_data_table();
    }
    // The selected layer in detail.
    const ExpertLayerView* sel = &layers.front();
    for (const ExpertLayerView& l : layers)
        if (l.layer == app.sel_layer) sel = &l;
    auto as_float = [](const std::vector<int>& v) { return std::vector<float>(v.begin(), v.end()); };
    const std::vector<float> prompt = as_float(sel->prompt_tokens), gen = as_float(sel->generated_tokens),
                             rolling = as_float(sel->rolling_tokens);
    ImGui::Text("layer %d%s", sel->layer, sel->shared_expert ? " (+ an always-on shared expert)" : "");
    ImGui::TextDisabled("per expert 0..%d (bars), each plot on its own scale:", sel->n_expert - 1);
    // Three plots a row, as wide as the row allows.
    const float spacing = ImGui::GetStyle().ItemSpacing.x;
    const ImVec2 plot(std::max((ImGui::GetContentRegionAvail().x - 2 * spacing) / 3.0f - 1.0f, 1.0f), ui_px(60));
    ImGui::PlotHistogram("##prompt", prompt.data(), int(prompt.size()), 0, "prompt", 0.0f, FLT_MAX, plot);
    ImGui::SameLine();
    ImGui::PlotHistogram("##gen", gen.data(), int(gen.size()), 0, "generated", 0.0f, FLT_MAX, plot);
    ImGui::SameLine();
    ImGui::PlotHistogram("##rolling", rolling.data(), int(rolling.size()), 0, "last 16 tokens", 0.0f, FLT_MAX, plot);
    ImGui::PlotHistogram("##pw", sel->prompt_weight.data(), int(sel->prompt_weight.size()), 0, "prompt gate weight", 0.0f,
                         FLT_MAX, plot);
    ImGui::SameLine();
    ImGui::PlotHistogram("##gw", sel->generated_weight.data(), int(sel->generated_weight.size()), 0,
                         "generated gate weight", 0.0f, FLT_MAX, plot);
    // The engine's own cumulative counts (prompt passes and decode steps since the session began).
    for (const auto* loads : {&s.probes->expert_load_prefill, &s.probes->expert_load_decode}) {
        for (const ExpertLoad& l : *loads)
            if (l.layer == sel->layer) {
                if (fits_after_last_item(plot.x)) ImGui::SameLine();
                ImGui::PlotHistogram(loads == &s.probes->expert_load_prefill ? "##cp" : "##cd", l.tokens.data(),
                                     int(l.tokens.size()), 0,
                                     loads == &s.probes->expert_load_prefill ? "cumulative prompt" : "cumulative decode",
                                     0.0f, FLT_MAX, plot);
            }
    }
    // The hovered token's path.
    if (app.hover_pos >= 0) {
        const auto path = token_path(*s.probes, app.hover_pos);
        std::string text;
        for (size_t i = 0; i < path.size(); ++i) {
            text += "L" + std::to_string(s.probes->routing[i].layer) + "[";
            for (size_t k = 0; k < path[i].size(); ++k) text += (k ? "," : "") + std::to_string(path[i][k]);
            text += "] ";
        }
        ImGui::Text("token %d \"%s\": %s", app.hover_pos, app.token_text(app.hover_pos).c_str(), text.c_str());
    } else {
        ImGui::TextDisabled("Hover a token in the chat to see its path through the experts.");
    }
    end_panel();
}

}  // namespace vkllm::studio
