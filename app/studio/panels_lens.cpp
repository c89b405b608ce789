// Logit lens: for each layer, the most probable next tokens read from the residual stream
// through the final norm and the output matrix, at a chosen position.
#include <algorithm>
#include <cstdio>

#include <imgui.h>
#include "heatmap.h"
#include "panel_frame.h"
#include "studio_app.h"

namespace vkllm::studio {

void draw_lens_panel(StudioApp& app) {
    if (!begin_panel(app, PanelLens)) {
        end_panel();
        return;
    }
    const ProbeHistory& h = *app.state->probes;
    const std::vector<int> positions = lens_positions(h);
    if (app.state->encoder) {
        ImGui::TextWrapped("An encoder predicts no next token, so there is no lens: the chat shows its masked-token "
                           "head's predictions at every position.");
        end_panel();
        return;
    }
    if (positions.empty()) {
        ImGui::TextDisabled("Send a message: each layer's guess for the next token appears here.");
        end_panel();
        return;
    }
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
