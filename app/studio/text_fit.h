// Text that does not fit: the check behind "no text cut". ImGui clips whatever passes a
// window's or a table column's edge; this finds it after the fact from ImGui's own bookkeeping
// (how far each window's and column's content reached against its visible width), so every
// caption, header and cell is covered without wrapping each call.
#pragma once

#include <string>
#include <vector>

namespace vkllm::studio {

struct TextOverflow {
    std::string where;   // "Activations", "Activations / table 'layers' column 'median |x|'"
    float needed = 0;    // how far the content reached past the left edge, pixels
    float available = 0; // the visible width, pixels
};

struct TextFitLog {
    std::vector<TextOverflow> overflows;  // the newest frame's
    int windows_checked = 0, tables_checked = 0;
    void clear() { *this = {}; }
};
TextFitLog& text_fit_log();

// A table of numbers whose columns take the width of their header and cells (never cut): it
// scrolls sideways when the panel is narrower, and down past `max_rows` rows (0: all). Text in
// it does not wrap. End it with end_data_table().
bool begin_data_table(const char* id, int columns, int rows, int max_rows = 0, int extra_flags = 0);
void end_data_table();
// Ends the current table (ImGui::EndTable) and records any column whose header or cells reach
// past its edge.
void end_table();
// Records every window drawn this frame whose name or whose root window's name is in `names`
// and whose content reaches past its visible width without a horizontal scrollbar. Call after
// the frame's windows are submitted.
void check_windows(const std::vector<std::string>& names);

}  // namespace vkllm::studio
