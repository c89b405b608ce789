// Logit lens: what each layer would predict as the next token if the model stopped there (the
// residual stream through the final norm and the output matrix, softmax and top-k on the GPU).
// A layers x positions grid (every position the lens was read at: the prompt's last positions
// the engine was asked for, then each generated token's), each cell the top token shaded by its
// probability; it zooms and pans as the maps do. Below it, the chosen position's top tokens per
// layer.
#include <algorithm>
#include <cstdio>
#include <string>

#include <imgui.h>
#include "heatmap.h"
#include "legends.h"
#include "panel_frame.h"
#include "studio_app.h"

namespace vkllm::studio {
namespace {

constexpr int kFollowCols = 32;  // columns shown while the grid follows the stream

// The grid: rows layers, columns positions labelled with their tokens, each cell's top token
// written in it where it fits. Clicking a cell picks its position for the table below.
void draw_lens_grid(StudioApp& app, const LensGrid& g, float height) {
    const int rows = g.rows(), cols = g.cols();
    const std::vector<float> shade = g.top_probs();
    // While the stream is followed the zoom shows the newest columns (the whole grid when it is
    // narrow); a wheel or drag afterwards is the user's until the next token.
    if (app.lens_position < 0 && cols != app.lens_grid_cols_followed) {
        app.lens_grid_cols_followed = cols;
        if (cols > kFollowCols) request_map_zoom("lens_grid", 1.0 - double(kFollowCols) / cols, 1.0, 0.0, 1.0);
    }
    MapLabels labels;
    labels.row = [&g](int i) { return "L" + std::to_string(g.layers[size_t(i)]); };
    labels.row_number = [&g](int i) { return g.layers[size_t(i)]; };
    labels.col = [&app, &g](int i) { return app.token_text(g.positions[size_t(i)]); };
    labels.row_margin = ImGui::CalcTextSize("L000").x + ui_px(8);
    map_axis_titles("layer", "position", labels.row_margin);  // short: the lens tile can be narrow
    const float w = std::max(ImGui::GetContentRegionAvail().x - labels.row_margin - ui_px(4), ui_px(60));
    const float line = ImGui::GetTextLineHeight();
    // Each cell's top token, in the cell where a few characters fit (the overlay is clipped to
    // the box; cells outside it are skipped).
    auto texts = [&](ImDrawList* dl, ImVec2 origin, ImVec2 cell) {
        if (cell.x < ui_px(18) || cell.y < line) return;
        const ImVec2 clip_lo = dl->GetClipRectMin(), clip_hi = dl->GetClipRectMax();
        const int c0 = std::clamp(int((clip_lo.x - origin.x) / cell.x), 0, cols);
        const int c1 = std::clamp(int((clip_hi.x - origin.x) / cell.x) + 1, 0, cols);
        const int r0 = std::clamp(int((clip_lo.y - origin.y) / cell.y), 0, rows);
        const int r1 = std::clamp(int((clip_hi.y - origin.y) / cell.y) + 1, 0, rows);
        for (int r = r0; r < r1; ++r)
            for (int c = c0; c < c1; ++c) {
                const std::vector<LensToken>& top = g.at(r, c);
                if (top.empty()) continue;
                const ImVec2 lo(origin.x + float(c) * cell.x + ui_px(2), origin.y + float(r) * cell.y + (cell.y - line) * 0.5f);
                const ImVec4 clip(lo.x, lo.y, lo.x + cell.x - ui_px(4), lo.y + line);
                // Dark text on the ramp's bright end, light on its dark end.
                const ImU32 ink = top[0].p > 0.55f ? IM_COL32(20, 20, 30, 255) : IM_COL32(240, 240, 245, 255);
                dl->AddText(nullptr, 0.0f, lo, ink, top[0].text.c_str(), nullptr, 0.0f, &clip);
            }
    };
    const float cell_h = std::clamp(height / float(std::max(rows, 1)), ui_px(6), ui_px(24));
    const HeatmapHover hv =
        draw_heatmap("lens_grid", shade.data(), rows, cols, ImVec2(w, cell_h * float(rows)), 0.0f, 1.0f, texts, labels);
    if (hv.hovered() && hv.row < rows && hv.col < cols) {
        const int pos = g.positions[size_t(hv.col)];
        const std::vector<LensToken>& top = g.at(hv.row, hv.col);
        ImGui::BeginTooltip();
        ImGui::Text("layer %d, position %d \"%s\"", g.layers[size_t(hv.row)], pos, app.token_text(pos).c_str());
        if (top.empty()) ImGui::TextDisabled("not read at this layer and position");
        for (const LensToken& t : top) ImGui::Text("%6.3f  \"%s\"", t.p, t.text.c_str());
        ImGui::TextDisabled("click: show this position below");
        ImGui::EndTooltip();
        if (ImGui::IsItemClicked()) app.lens_position = pos;
    }
    ramp_legend("top p", "0", "1");  // the top token's probability; short: the tile can be narrow
}

}  // namespace

void draw_lens_panel(StudioApp& app) {
    if (!begin_panel(app, PanelLens)) {
        end_panel();
        return;
    }
    const ProbeHistory& h = *app.state->probes;
    if (app.state->encoder) {
        ImGui::TextWrapped("An encoder predicts no next token, so there is no lens: the chat shows its masked-token "
                           "head's predictions at every position.");
        end_panel();
        return;
    }
    if (app.lens_grid_version != app.state->version) {
        app.lens_grid = lens_grid(h);
        app.lens_grid_version = app.state->version;
    }
    const LensGrid& g = app.lens_grid;
    const std::vector<int>& positions = g.positions;
    if (positions.empty()) {
        ImGui::TextDisabled("Send a message: each layer's guess for the next token appears here.");
        end_panel();
        return;
    }
    ImGui::TextDisabled("each layer's most likely next token at each position (wheel: zoom, drag: pan, hover: top tokens)");
    draw_lens_grid(app, g, ImGui::GetContentRegionAvail().y * 0.45f);

    // The position: the newest unless one is picked.
    int index = int(positions.size()) - 1;
    for (size_t i = 0; i < positions.size(); ++i)
        if (positions[i] == app.lens_position) index = int(i);
    // The slider shows the position it stands on (its value is an index into the lens's positions).
    char shown[48];
    snprintf(shown, sizeof shown, "position %d of %d", positions[size_t(index)], positions.back());
    ImGui::SetNextItemWidth(-1);
    if (ImGui::SliderInt("##position", &index, 0, int(positions.size()) - 1, shown))
        app.lens_position = positions[size_t(index)];
    if (index == int(positions.size()) - 1 && app.state->generating) app.lens_position = -1;  // follow the stream
    const int pos = positions[size_t(index)];
    ImGui::Text("after token %d \"%s\"", pos, app.token_text(pos).c_str());
    const std::vector<LensRow> rows = app.lens_position < 0 ? app.vm.lens : lens_rows(h, pos);
    // Columns as many as the lens has (at most 8), as wide as their tokens: it scrolls sideways.
    int cols = 0;
    for (const LensRow& r : rows) cols = std::max(cols, int(r.top.size()));
    cols = std::clamp(cols, 1, 8);
    ImGui::TextDisabled("each layer's most likely next tokens, cell colour by probability (0 to 1)");
    if (begin_data_table("lens", cols + 1, int(rows.size()), 0)) {
        ImGui::TableSetupColumn("layer");
        for (int c = 0; c < cols; ++c) ImGui::TableSetupColumn(("#" + std::to_string(c + 1)).c_str());
        ImGui::TableHeadersRow();
        for (const LensRow& r : rows) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::Text("%d", r.layer);
            for (int c = 0; c < cols; ++c) {
                ImGui::TableNextColumn();
                if (c >= int(r.top.size())) continue;
                const LensToken& t = r.top[size_t(c)];
                ImGui::TableSetBgColor(ImGuiTableBgTarget_CellBg,
                                       ImGui::ColorConvertFloat4ToU32(ImVec4(0.2f, 0.55f, 0.9f, 0.15f + 0.7f * t.p)));
                ImGui::Text("%s %.2f", t.text.c_str(), t.p);
            }
        }
        end_data_table();
    }
    end_panel();
}

}  // namespace vkllm::studio
