#include "panel_frame.h"

#include <cstdarg>
#include <cstdio>

#include <imgui.h>
#include <imgui_internal.h>  // the title bar's rectangle, ButtonBehavior

#include "heatmap.h"
#include "studio_app.h"

namespace vkllm::studio {

namespace {

// The maximise / restore toggle drawn left of the close button.
bool maximise_button(bool maximised) {
    ImGuiWindow* w = ImGui::GetCurrentWindow();
    const ImRect title = w->TitleBarRect();
    const ImGuiStyle& style = ImGui::GetStyle();
    const float size = ImGui::GetFontSize();
    // The close button takes a square of the font size at the right, inside the frame padding.
    const ImVec2 min(title.Max.x - style.FramePadding.x - size * 2 - style.ItemInnerSpacing.x, title.Min.y + style.FramePadding.y);
    const ImRect bb(min, ImVec2(min.x + size, min.y + size));
    const ImGuiID id = w->GetID("#maximise");
    ImGui::PushClipRect(title.Min, title.Max, false);
    bool hovered = false, held = false, pressed = false;
    if (ImGui::ItemAdd(bb, id)) pressed = ImGui::ButtonBehavior(bb, id, &hovered, &held);
    ImDrawList* dl = w->DrawList;
    if (hovered) dl->AddRectFilled(bb.Min, bb.Max, ImGui::GetColorU32(held ? ImGuiCol_ButtonActive : ImGuiCol_ButtonHovered), 2);
    const ImU32 ink = ImGui::GetColorU32(ImGuiCol_Text);
    const float m = size * 0.22f, t = std::max(1.0f, size * 0.08f);
    if (!maximised) {
        dl->AddRect(ImVec2(bb.Min.x + m, bb.Min.y + m), ImVec2(bb.Max.x - m, bb.Max.y - m), ink, 0, 0, t);
    } else {  // two overlapping windows: restore
        const float o = size * 0.14f;
        dl->AddRect(ImVec2(bb.Min.x + m + o, bb.Min.y + m), ImVec2(bb.Max.x - m, bb.Max.y - m - o), ink, 0, 0, t);
        dl->AddRectFilled(ImVec2(bb.Min.x + m, bb.Min.y + m + o), ImVec2(bb.Max.x - m - o, bb.Max.y - m),
                          ImGui::GetColorU32(ImGuiCol_TitleBgActive));
        dl->AddRect(ImVec2(bb.Min.x + m, bb.Min.y + m + o), ImVec2(bb.Max.x - m - o, bb.Max.y - m), ink, 0, 0, t);
    }
    ImGui::PopClipRect();
    if (hovered) ImGui::SetTooltip(maximised ? "Restore the tiles (F11)" : "Maximise this panel (F11)");
    // A double-click on the title does the same.
    const bool title_double_click = ImGui::IsWindowHovered() && ImGui::IsMouseDoubleClicked(0) &&
                                    title.Contains(ImGui::GetIO().MousePos) && !bb.Contains(ImGui::GetIO().MousePos);
    return pressed || title_double_click;
}

}  // namespace

bool begin_panel(StudioApp& app, int panel) {
    const Rect& r = app.tiling.panels[size_t(panel)];
    ImGui::SetNextWindowPos(ImVec2(r.x, r.y), ImGuiCond_Always);
    ImGui::SetNextWindowSize(ImVec2(std::max(r.w, 1.0f), std::max(r.h, 1.0f)), ImGuiCond_Always);
    const ImGuiWindowFlags flags = ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse |
                                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus;
    const bool shown = ImGui::Begin(panel_title(panel), &app.settings.open[size_t(panel)], flags);
    if (shown && ImGui::IsWindowFocused(ImGuiFocusedFlags_RootAndChildWindows)) app.focused_panel = panel;
    if (shown && maximise_button(app.maximised == panel)) app.maximised = app.maximised == panel ? -1 : panel;
    // Text wraps at the panel's edge (or a table cell's) rather than running past it.
    ImGui::PushTextWrapPos(0.0f);
    return shown;
}

bool fits_after_last_item(float width) {
    const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
    return ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + width <= right;
}

void bullet_text(const char* fmt, ...) {
    char text[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    ImGui::Bullet();
    ImGui::TextWrapped("%s", text);
}

void end_panel() {
    ImGui::PopTextWrapPos();
    ImGui::End();
}

void draw_splitters(StudioApp& app) {
    const ImGuiViewport* vp = ImGui::GetMainViewport();
    ImGui::SetNextWindowPos(vp->WorkPos);
    ImGui::SetNextWindowSize(vp->WorkSize);
    ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(0, 0));
    ImGui::PushStyleVar(ImGuiStyleVar_WindowBorderSize, 0);
    ImGui::Begin("##tiles", nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus |
                     ImGuiWindowFlags_NoNav | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoBackground |
                     ImGuiWindowFlags_NoScrollWithMouse);
    for (size_t i = 0; i < app.tiling.splitters.size(); ++i) {
        const Splitter& s = app.tiling.splitters[i];
        ImGui::SetCursorScreenPos(ImVec2(s.r.x, s.r.y));
        ImGui::PushID(int(i));
        ImGui::InvisibleButton("##split", ImVec2(std::max(s.r.w, 1.0f), std::max(s.r.h, 1.0f)));
        const bool active = ImGui::IsItemActive(), hovered = ImGui::IsItemHovered();
        if (active || hovered) ImGui::SetMouseCursor(s.vertical ? ImGuiMouseCursor_ResizeEW : ImGuiMouseCursor_ResizeNS);
        if (active || hovered)
            ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(s.r.x, s.r.y), ImVec2(s.r.x + s.r.w, s.r.y + s.r.h),
                                                      ImGui::GetColorU32(active ? ImGuiCol_SeparatorActive : ImGuiCol_SeparatorHovered));
        if (active) {
            const ImVec2 d = ImGui::GetIO().MouseDelta;
            const float delta = s.vertical ? d.x : d.y;
            if (delta != 0) drag_splitter(app.layout, s, delta, ui_px(120));
        }
        ImGui::PopID();
    }
    ImGui::End();
    ImGui::PopStyleVar(2);
}

}  // namespace vkllm::studio
