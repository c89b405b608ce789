// Heatmaps drawn as ImDrawList rectangles (ImGui 1.86's Vulkan backend cannot bind user
// textures). Cells are binned to the pixel grid: with more cells than pixels along an axis,
// each pixel shows the largest of the cells it covers, so a thin spike never disappears.
#pragma once

#include <functional>

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

// Draws values[row * cols + col] scaled from [lo, hi] into a size-pixel box at the cursor and
// advances the cursor. `overlay` draws on top (bands, marks) given the box's corner and cell size.
HeatmapHover draw_heatmap(const char* id, const float* values, int rows, int cols, ImVec2 size, float lo, float hi,
                          const std::function<void(ImDrawList*, ImVec2 origin, ImVec2 cell)>& overlay = nullptr);

}  // namespace vkllm::studio
