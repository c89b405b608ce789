// Panels as tiles: each panel's window is placed where the layout puts it (it cannot be moved,
// resized or floated over another), with a maximise button in its title bar (or a double-click
// on the title); the splitters between tiles are dragged to share the room.
#pragma once

namespace vkllm::studio {

class StudioApp;

// ImGui::Begin for a panel at its tile; false when it is not drawn (call ImGui::End either way).
bool begin_panel(StudioApp& app, int panel);
// Whether an item `width` pixels wide fits on the line after the last item (then SameLine()).
// Decided before SameLine: a NewLine after SameLine would count the spacing as content.
bool fits_after_last_item(float width);
// A bullet and its text, wrapped at the panel's edge (ImGui::BulletText does not wrap).
void bullet_text(const char* fmt, ...);
// Ends a panel begin_panel began.
void end_panel();
// The splitters between the tiles, in a window behind the panels (its only visible parts are the
// gaps between them).
void draw_splitters(StudioApp& app);

}  // namespace vkllm::studio
