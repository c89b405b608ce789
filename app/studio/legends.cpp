#include "legends.h"

#include <algorithm>
#include <string>

#include "heatmap.h"
#include "panel_frame.h"

namespace vkllm::studio {

ImU32 expert_color(int expert, int n_expert) {
    if (expert < 0) return 0;
    const float hue = float(expert) / float(std::max(n_expert, 1));
    float r, g, b;
    ImGui::ColorConvertHSVtoRGB(hue, 0.55f, 0.85f, r, g, b);
    return ImGui::ColorConvertFloat4ToU32(ImVec4(r, g, b, 0.55f));
}

void ramp_legend(const char* caption, const char* lo_label, const char* hi_label, float alpha) {
    const float bar_w = ui_px(90), h = ImGui::GetTextLineHeight();
    const float need = ImGui::CalcTextSize(caption).x + ImGui::CalcTextSize(lo_label).x + bar_w +
                       ImGui::CalcTextSize(hi_label).x + ImGui::GetStyle().ItemSpacing.x * 3;
    if (need > ImGui::GetContentRegionAvail().x) ImGui::NewLine();
    ImGui::TextDisabled("%s", caption);
    ImGui::SameLine();
    ImGui::TextUnformatted(lo_label);
    ImGui::SameLine();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const int steps = 24;
    for (int i = 0; i < steps; ++i) {
        const float x0 = p.x + bar_w * float(i) / steps, x1 = p.x + bar_w * float(i + 1) / steps;
        dl->AddRectFilled(ImVec2(x0, p.y + 2), ImVec2(x1, p.y + h - 2), ramp_color((float(i) + 0.5f) / steps, alpha));
    }
    ImGui::Dummy(ImVec2(bar_w, h));
    ImGui::SameLine();
    ImGui::TextUnformatted(hi_label);
}

void expert_legend(int n_expert) {
    ImGui::TextDisabled("experts");
    const float h = ImGui::GetTextLineHeight();
    for (int e = 0; e < n_expert; ++e) {
        const std::string label = std::to_string(e);
        const float w = ImGui::CalcTextSize(label.c_str()).x + ui_px(8);
        const float more = ImGui::CalcTextSize("...").x + ImGui::GetStyle().ItemSpacing.x;
        if (!fits_after_last_item(w + more)) {
            if (fits_after_last_item(more)) ImGui::SameLine();
            ImGui::TextDisabled("...");
            return;
        }
        ImGui::SameLine();
        const ImVec2 p = ImGui::GetCursorScreenPos();
        ImGui::GetWindowDrawList()->AddRectFilled(p, ImVec2(p.x + w, p.y + h), expert_color(e, n_expert), 2.0f);
        ImGui::GetWindowDrawList()->AddText(ImVec2(p.x + ui_px(4), p.y), ImGui::GetColorU32(ImGuiCol_Text), label.c_str());
        ImGui::Dummy(ImVec2(w, h));
    }
}

}  // namespace vkllm::studio
