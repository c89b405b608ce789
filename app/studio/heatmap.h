// Heatmaps drawn as ImDrawList rectangles (ImGui 1.86's Vulkan backend cannot bind user
// textures). Cells are binned to the pixel grid: with more cells than pixels along an axis,
// each pixel shows the largest of the cells it covers, so a thin spike never disappears.
#pragma once

#include <functional>
#include <string>

#include <imgui.h>

namespace vkllm::studio {

// A colour for t in [0, 1] from a perceptual ramp (dark blue, teal, yellow).
ImU32 ramp_color(float t, float alpha = 1.0f);

// A text colour readable on the current theme: as given on a dark window background, darkened
// on a light one (the accents are chosen for the dark theme).
ImVec4 readable(ImVec4 color);
// A size in pixels at UI scale 1 (a 15-pixel font), scaled like the font: fixed widths and
// heights grow with the UI scale (HiDPI) so that nothing clips at scale 2.
float ui_px(float px);

struct HeatmapHover {
    int row = -1, col = -1;
    bool hovered() const { return row >= 0; }
};

// Text for the cells along an axis (a token's text, a layer's name); empty: no labels there.
struct MapLabels {
    std::function<std::string(int)> row, col;
    // The number shown where the text does not fit (a query row's position); empty: the index.
    std::function<int(int)> row_number;
    // The row labels' margin in pixels (0: room for a token's text, 72 at scale 1).
    float row_margin = 0;
};

// An axis title line above a labelled map: `row_title` over the row labels' margin (`row_margin`
// pixels, as MapLabels has it), `col_title` over the columns. Shortens the margin's title to fit.
void map_axis_titles(const char* row_title, const char* col_title, float row_margin);

// Draws values[row * cols + col] scaled from [lo, hi] into a size-pixel box at the cursor and
// advances the cursor. `overlay` draws on top (bands, marks) given the corner of the whole map
// (outside the box when zoomed) and the cell size; it is clipped to the box. Every map zooms and
// pans (map_view.h): the wheel zooms around the cursor (Ctrl+wheel on a map under 96 pixels, so
// a grid of thumbnails still scrolls), a drag pans, a double-click resets; the state is kept per id. With labels, a margin left of and below the box names the visible rows
// and columns: their text where it fits (cut with an ellipsis), else their index every few cells.
HeatmapHover draw_heatmap(const char* id, const float* values, int rows, int cols, ImVec2 size, float lo, float hi,
                          const std::function<void(ImDrawList*, ImVec2 origin, ImVec2 cell)>& overlay = nullptr,
                          const MapLabels& labels = {});

// Sets the zoom of the map drawn with `id` on its next frame, as fractions of its columns
// [x0, x1) and rows [y0, y1) (a script's "zoom" command; clamped as the wheel is).
void request_map_zoom(const std::string& id, double x0, double x1, double y0, double y1);
// Whether a zoom is waiting for the map `id` (a view that may be hidden shows itself for it).
bool map_zoom_pending(const std::string& id);

}  // namespace vkllm::studio
