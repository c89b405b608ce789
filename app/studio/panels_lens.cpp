// Logit lens: for each layer, the most probable next tokens read from the residual stream
// through the final norm and the output matrix, at a chosen position.
#include <algorithm>

#include <imgui.h>
#include "heatmap.h"
#include "studio_app.h"

namespace vkllm::studio {

void draw_lens_panel(StudioApp& app) {
    if (!ImGui::Begin(panel_title(PanelLens), &app.settings.open[PanelLens])) {
        ImGui::End();
        return;
    }
    const ProbeHistory& h = *app.state->probes;
    const std::vector<int> positions = lens_positions(h);
    if (app.state->encoder) {
        ImGui::TextWrapped("An encoder predicts no next token, so there is no lens: the chat shows its masked-token "
                           "head's predictions at every position.");
        ImGui::End();
        return;
    }
    if (positions.empty()) {
        ImGui::TextDisabled("Send a message: each layer's guess for the next token appears here.");
        ImGui::End();
        return;
    }
    // The position: the newest unless one is picked.
    int index = int(positions.size()) - 1;
    for (size_t i = 0; i < positions.size(); ++i)
        if (positions[i] == app.lens_position) index = int(i);
    ImGui::SetNextItemWidth(-ui_px(120));
    if (ImGui::SliderInt("position", &index, 0, int(positions.size()) - 1, "")) app.lens_position = positions[size_t(index)];
    if (index == int(positions.size()) - 1 && app.state->generating) app.lens_position = -1;  // follow the stream
    const int pos = positions[size_t(index)];
    ImGui::Text("after token %d \"%s\"", pos, app.token_text(pos).c_str());
    const std::vector<LensRow> rows = app.lens_position < 0 ? app.vm.lens : lens_rows(h, pos);
    const int cols = std::clamp(int((ImGui::GetContentRegionAvail().x - ui_px(40)) / ui_px(95)), 2, 8);
    if (ImGui::BeginTable("lens", cols + 1, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingStretchSame)) {
        ImGui::TableSetupColumn("layer", ImGuiTableColumnFlags_WidthFixed, ui_px(40));
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
        ImGui::EndTable();
    }
    ImGui::End();
}

}  // namespace vkllm::studio
