#include "heatmap.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace vkllm::studio {

ImU32 ramp_color(float t, float alpha) {
    // Stops of a viridis-like ramp.
    static const float stops[5][3] = {
        {0.267f, 0.005f, 0.329f}, {0.231f, 0.322f, 0.545f}, {0.129f, 0.569f, 0.549f},
        {0.369f, 0.788f, 0.384f}, {0.993f, 0.906f, 0.144f}};
    t = std::clamp(std::isfinite(t) ? t : 0.0f, 0.0f, 1.0f) * 4.0f;
    const int i = std::min(int(t), 3);
    const float f = t - float(i);
    float c[3];
    for (int k = 0; k < 3; ++k) c[k] = stops[i][k] + (stops[i + 1][k] - stops[i][k]) * f;
    return ImGui::ColorConvertFloat4ToU32(ImVec4(c[0], c[1], c[2], alpha));
}

ImVec4 readable(ImVec4 c) {
    const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
    const float luminance = 0.299f * bg.x + 0.587f * bg.y + 0.114f * bg.z;
    if (luminance < 0.5f) return c;
    return ImVec4(c.x * 0.55f, c.y * 0.55f, c.z * 0.55f, c.w);
}

float ui_px(float px) { return px * ImGui::GetFontSize() / 15.0f; }

HeatmapHover draw_heatmap(const char* id, const float* values, int rows, int cols, ImVec2 size, float lo, float hi,
                          const std::function<void(ImDrawList*, ImVec2, ImVec2)>& overlay) {
    HeatmapHover hover;
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    ImGui::InvisibleButton(id, ImVec2(std::max(size.x, 1.0f), std::max(size.y, 1.0f)));
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRectFilled(origin, ImVec2(origin.x + size.x, origin.y + size.y), ramp_color(0.0f));
    if (rows <= 0 || cols <= 0) return hover;
    // Bins: at most one per pixel along each axis.
    const int bins_x = std::max(1, std::min(cols, int(size.x))), bins_y = std::max(1, std::min(rows, int(size.y)));
    const float bw = size.x / float(bins_x), bh = size.y / float(bins_y);
    const float span = hi > lo ? hi - lo : 1.0f;
    std::vector<float> binned(size_t(bins_x) * size_t(bins_y), -INFINITY);
    for (int r = 0; r < rows; ++r) {
        const int by = int(int64_t(r) * bins_y / rows);
        for (int c = 0; c < cols; ++c) {
            const int bx = int(int64_t(c) * bins_x / cols);
            float& b = binned[size_t(by) * size_t(bins_x) + size_t(bx)];
            b = std::max(b, values[size_t(r) * size_t(cols) + size_t(c)]);
        }
    }
    for (int y = 0; y < bins_y; ++y)
        for (int x = 0; x < bins_x; ++x) {
            const float t = (binned[size_t(y) * size_t(bins_x) + size_t(x)] - lo) / span;
            if (!(t > 0.004f)) continue;  // the background already has the lowest colour
            const ImVec2 a(origin.x + float(x) * bw, origin.y + float(y) * bh);
            dl->AddRectFilled(a, ImVec2(a.x + bw, a.y + bh), ramp_color(t));
        }
    const ImVec2 cell(size.x / float(cols), size.y / float(rows));
    if (overlay) overlay(dl, origin, cell);
    if (ImGui::IsItemHovered()) {
        const ImVec2 m = ImGui::GetMousePos();
        hover.col = std::clamp(int((m.x - origin.x) / cell.x), 0, cols - 1);
        hover.row = std::clamp(int((m.y - origin.y) / cell.y), 0, rows - 1);
    }
    return hover;
}

}  // namespace vkllm::studio
