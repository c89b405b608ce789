#include "text_fit.h"

#include <algorithm>

#include <imgui.h>
#include <imgui_internal.h>

namespace vkllm::studio {

namespace {
constexpr float kSlack = 1.0f;  // rounding: a pixel is not a cut
}

TextFitLog& text_fit_log() {
    static TextFitLog log;
    return log;
}

bool begin_data_table(const char* id, int columns, int rows, int max_rows, int extra_flags) {
    const ImGuiStyle& st = ImGui::GetStyle();
    const float row_h = ImGui::GetFrameHeight() + st.CellPadding.y * 2;
    const int shown = max_rows > 0 ? std::min(rows, max_rows) : rows;
    const float h = ImGui::GetTextLineHeight() + st.CellPadding.y * 2 + row_h * float(shown) + st.ScrollbarSize + 4;
    const ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit |
                                  ImGuiTableFlags_ScrollX | ImGuiTableFlags_ScrollY | extra_flags;
    if (!ImGui::BeginTable(id, columns, flags, ImVec2(0, h))) return false;
    ImGui::TableSetupScrollFreeze(0, 1);  // the header stays in view
    ImGui::PushTextWrapPos(-1.0f);  // auto-fitted columns: wrapping would keep them narrow
    return true;
}

void end_data_table() {
    ImGui::PopTextWrapPos();
    end_table();
}

void end_table() {
    ImGuiTable* t = ImGui::GetCurrentTable();
    ImGui::EndTable();
    if (!t) return;
    TextFitLog& log = text_fit_log();
    ++log.tables_checked;
    // A table that scrolls sideways shows all of its columns by scrolling: nothing is cut.
    if (t->Flags & ImGuiTableFlags_ScrollX) return;
    const std::string window = t->OuterWindow && t->OuterWindow->RootWindow ? t->OuterWindow->RootWindow->Name : "?";
    for (int i = 0; i < t->ColumnsCount; ++i) {
        const ImGuiTableColumn& c = t->Columns[i];
        if (!c.IsEnabled || !c.IsVisibleX) continue;
        const float reached = std::max(c.ContentMaxXUnfrozen, c.ContentMaxXHeadersIdeal);
        if (reached > c.WorkMaxX + kSlack) {
            const char* name = ImGui::TableGetColumnName(t, i);
            log.overflows.push_back({window + " / table column '" + std::string(name ? name : "") + "' (" +
                                         std::to_string(i) + ")",
                                     reached - c.WorkMinX, c.WorkMaxX - c.WorkMinX});
        }
    }
}

void check_windows(const std::vector<std::string>& names) {
    TextFitLog& log = text_fit_log();
    ImGuiContext& g = *ImGui::GetCurrentContext();
    for (ImGuiWindow* w : g.Windows) {
        if (!w->Active || w->Hidden || w->Collapsed || !w->RootWindow) continue;
        const std::string root = w->RootWindow->Name;
        if (std::find(names.begin(), names.end(), root) == names.end()) continue;
        // A text box's own window ("Chat/##input_..."): the user's text scrolls with the cursor.
        const std::string name = w->Name;
        if (name.find("/##") != std::string::npos) continue;
        ++log.windows_checked;
        // One that scrolls sideways (a wide table, a code block) shows the rest by scrolling.
        if (w->ScrollbarX || (w->Flags & ImGuiWindowFlags_HorizontalScrollbar)) continue;
        // The visible content width: the work rectangle's right edge (the inner rectangle less
        // the padding); items that reach past it are drawn into the padding or clipped away.
        const float reached = w->DC.CursorMaxPos.x, edge = w->WorkRect.Max.x;
        if (reached > edge + kSlack)
            log.overflows.push_back({std::string(w->Name), reached - w->DC.CursorStartPos.x, edge - w->DC.CursorStartPos.x});
    }
}

}  // namespace vkllm::studio
