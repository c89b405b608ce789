#include "heatmap.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

#include <imgui_internal.h>

#include "map_view.h"

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

namespace {

std::unordered_map<ImGuiID, MapView>& map_views() {
    static std::unordered_map<ImGuiID, MapView> views;
    return views;
}
std::unordered_map<std::string, MapView>& zoom_requests() {
    static std::unordered_map<std::string, MapView> requests;
    return requests;
}

// One line of a token's text for a label: line breaks and tabs shown as escapes.
std::string one_line(const std::string& s) {
    std::string out;
    for (char c : s) out += c == '\n' ? std::string("\\n") : c == '\t' ? std::string("\\t") : std::string(1, c);
    return out;
}

// `s` cut (at a UTF-8 character boundary) to fit `max_px`, with an ellipsis when cut; empty
// when not even one character and the ellipsis fit.
std::string fit_label(const std::string& text, float max_px) {
    std::string s = one_line(text);
    if (ImGui::CalcTextSize(s.c_str()).x <= max_px) return s;
    const char* ellipsis = ImGui::GetFont()->FindGlyphNoFallback(0x2026) ? "\xE2\x80\xA6" : "..";
    while (!s.empty()) {
        s.pop_back();
        while (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0x80) s.pop_back();
        if (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0xC0) s.pop_back();  // a cut lead byte
        if (!s.empty() && ImGui::CalcTextSize((s + ellipsis).c_str()).x <= max_px) return s + ellipsis;
    }
    return {};
}

// The labels of the visible rows (left of the box) and columns (below it).
void draw_labels(ImDrawList* dl, const MapLabels& labels, const MapView& v, int rows, int cols, ImVec2 box, ImVec2 size,
                 float left_margin) {
    const ImU32 color = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    const float line = ImGui::GetTextLineHeight();
    if (labels.row) {
        const float cell = size.y / float((v.y1 - v.y0) * rows);
        const bool text = cell >= line;  // one line of text per row fits
        const int step = text ? 1 : label_step(cell, line);
        const CellRange r = v.visible_rows(rows);
        dl->PushClipRect(ImVec2(box.x - left_margin, box.y), ImVec2(box.x, box.y + size.y), true);
        for (int i = r.first - r.first % step; i < r.end; i += step) {
            const float y = box.y + float((v.row_edge(i, rows) + v.row_edge(i + 1, rows)) * 0.5) * size.y - line * 0.5f;
            const std::string s = text ? fit_label(labels.row(i), left_margin - 4)
                                       : std::to_string(labels.row_number ? labels.row_number(i) : i);
            dl->AddText(ImVec2(box.x - 4 - ImGui::CalcTextSize(s.c_str()).x, y), color, s.c_str());
        }
        dl->PopClipRect();
    }
    if (labels.col) {
        const float cell = size.x / float((v.x1 - v.x0) * cols);
        const bool text = cell >= ImGui::CalcTextSize("ab").x + 4;  // at least a character and an ellipsis
        const int step = text ? 1 : label_step(cell, ImGui::CalcTextSize(std::to_string(cols).c_str()).x + 6);
        const CellRange c = v.visible_cols(cols);
        dl->PushClipRect(ImVec2(box.x, box.y + size.y), ImVec2(box.x + size.x, box.y + size.y + line + 2), true);
        for (int i = c.first - c.first % step; i < c.end; i += step) {
            const float x = box.x + float((v.col_edge(i, cols) + v.col_edge(i + 1, cols)) * 0.5) * size.x;
            const std::string s = text ? fit_label(labels.col(i), cell - 2) : std::to_string(i);
            dl->AddText(ImVec2(x - ImGui::CalcTextSize(s.c_str()).x * 0.5f, box.y + size.y + 1), color, s.c_str());
        }
        dl->PopClipRect();
    }
}

}  // namespace

void request_map_zoom(const std::string& id, double x0, double x1, double y0, double y1) {
    MapView v;
    v.x0 = std::clamp(std::min(x0, x1), 0.0, 1.0);
    v.x1 = std::clamp(std::max(x0, x1), v.x0, 1.0);
    v.y0 = std::clamp(std::min(y0, y1), 0.0, 1.0);
    v.y1 = std::clamp(std::max(y0, y1), v.y0, 1.0);
    zoom_requests()[id] = v;
}

void map_axis_titles(const char* row_title, const char* col_title, float row_margin) {
    const ImVec2 at = ImGui::GetCursorScreenPos();
    const ImU32 ink = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const std::string row = fit_label(row_title, row_margin - 4);
    dl->AddText(ImVec2(at.x + row_margin - 4 - ImGui::CalcTextSize(row.c_str()).x, at.y), ink, row.c_str());
    const std::string col = std::string(col_title) + " \xE2\x86\x92";  // an arrow along the columns
    const bool arrow = ImGui::GetFont()->FindGlyphNoFallback(0x2192) != nullptr;
    const std::string shown = arrow ? col : std::string(col_title) + " ->";
    dl->AddText(ImVec2(at.x + row_margin, at.y), ink, shown.c_str());
    ImGui::Dummy(ImVec2(row_margin + ImGui::CalcTextSize(shown.c_str()).x, ImGui::GetTextLineHeight()));
}

bool map_zoom_pending(const std::string& id) { return zoom_requests().count(id) > 0; }

HeatmapHover draw_heatmap(const char* id, const float* values, int rows, int cols, ImVec2 size, float lo, float hi,
                          const std::function<void(ImDrawList*, ImVec2, ImVec2)>& overlay, const MapLabels& labels) {
    HeatmapHover hover;
    size = ImVec2(std::max(size.x, 1.0f), std::max(size.y, 1.0f));
    const float left_margin = labels.row ? (labels.row_margin > 0 ? labels.row_margin : ui_px(72)) : 0.0f;
    const float bottom_margin = labels.col ? ImGui::GetTextLineHeight() + 2 : 0.0f;
    if (labels.row || labels.col) {
        // The margins take layout space in the same line, so the box stays the last item (callers
        // ask IsItemHovered / IsItemClicked of it).
        ImGui::Dummy(ImVec2(left_margin, size.y + bottom_margin));
        ImGui::SameLine(0, 0);
    }
    const ImVec2 box = ImGui::GetCursorScreenPos();
    const ImGuiID key = ImGui::GetID(id);
    ImGui::InvisibleButton(id, size);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRectFilled(box, ImVec2(box.x + size.x, box.y + size.y), ramp_color(0.0f));
    if (rows <= 0 || cols <= 0) return hover;

    // Zoom and pan, from this frame's input.
    MapView& v = map_views()[key];
    if (auto it = zoom_requests().find(id); it != zoom_requests().end()) {
        v = it->second;
        v.zoom_at(0.5, 0.5, 1.0, rows, cols);  // clamps to at least one cell
        zoom_requests().erase(it);
    }
    const ImGuiIO& io = ImGui::GetIO();
    const ImVec2 m = ImGui::GetMousePos();
    // A small map (a grid's thumbnail) zooms on Ctrl+wheel only, so the plain wheel still
    // scrolls the grid it sits in.
    const bool small = std::min(size.x, size.y) < ui_px(96);
    if (ImGui::IsItemHovered() && (!small || io.KeyCtrl)) {
        ImGui::SetItemUsingMouseWheel();  // the wheel zooms the map instead of scrolling the panel
        if (io.MouseWheel != 0.0f)
            v.zoom_at((m.x - box.x) / size.x, (m.y - box.y) / size.y, std::pow(1.25, double(io.MouseWheel)), rows, cols);
        if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) v.reset();
    }
    if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 2.0f))
        v.pan(io.MouseDelta.x / size.x, io.MouseDelta.y / size.y);

    // Bins over the visible cells: at most one per pixel along each axis.
    const CellRange vr = v.visible_rows(rows), vc = v.visible_cols(cols);
    const int bins_x = std::max(1, std::min(vc.count(), int(size.x))), bins_y = std::max(1, std::min(vr.count(), int(size.y)));
    const float span = hi > lo ? hi - lo : 1.0f;
    std::vector<float> binned(size_t(bins_x) * size_t(bins_y), -INFINITY);
    for (int r = vr.first; r < vr.end; ++r) {
        const int by = int(int64_t(r - vr.first) * bins_y / vr.count());
        for (int c = vc.first; c < vc.end; ++c) {
            const int bx = int(int64_t(c - vc.first) * bins_x / vc.count());
            float& b = binned[size_t(by) * size_t(bins_x) + size_t(bx)];
            b = std::max(b, values[size_t(r) * size_t(cols) + size_t(c)]);
        }
    }
    // A bin's first cell along an axis of `n` visible cells from `first`.
    auto first_cell = [](int bin, int bins, const CellRange& range) {
        return range.first + int((int64_t(bin) * range.count() + bins - 1) / bins);
    };
    auto px_x = [&](int cell) { return box.x + std::clamp(float(v.col_edge(cell, cols)), 0.0f, 1.0f) * size.x; };
    auto px_y = [&](int cell) { return box.y + std::clamp(float(v.row_edge(cell, rows)), 0.0f, 1.0f) * size.y; };
    for (int y = 0; y < bins_y; ++y) {
        const float ya = px_y(first_cell(y, bins_y, vr)), yb = px_y(first_cell(y + 1, bins_y, vr));
        for (int x = 0; x < bins_x; ++x) {
            const float t = (binned[size_t(y) * size_t(bins_x) + size_t(x)] - lo) / span;
            if (!(t > 0.004f)) continue;  // the background already has the lowest colour
            dl->AddRectFilled(ImVec2(px_x(first_cell(x, bins_x, vc)), ya), ImVec2(px_x(first_cell(x + 1, bins_x, vc)), yb),
                              ramp_color(t));
        }
    }
    // The whole map's corner and cell size: the overlay draws in map coordinates, clipped.
    const ImVec2 cell(float(size.x / ((v.x1 - v.x0) * cols)), float(size.y / ((v.y1 - v.y0) * rows)));
    const ImVec2 origin(box.x - float(v.x0 * cols) * cell.x, box.y - float(v.y0 * rows) * cell.y);
    if (overlay) {
        dl->PushClipRect(box, ImVec2(box.x + size.x, box.y + size.y), true);
        overlay(dl, origin, cell);
        dl->PopClipRect();
    }
    if (labels.row || labels.col) draw_labels(dl, labels, v, rows, cols, box, size, left_margin);
    if (ImGui::IsItemHovered()) {
        hover.col = v.col_at((m.x - box.x) / size.x, cols);
        hover.row = v.row_at((m.y - box.y) / size.y, rows);
    }
    return hover;
}

}  // namespace vkllm::studio
