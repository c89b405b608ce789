// Heatmaps drawn as ImDrawList rectangles (ImGui 1.86's Vulkan backend cannot bind user
// textures). Cells are binned to the pixel grid: with more cells than pixels along an axis,
// each pixel shows the largest of the cells it covers, so a thin spike never disappears.
#pragma once

#include <functional>

#include <imgui.h>

namespace vkllm::studio {

// A colour for t in [0, 1] from a perceptual ramp (dark blue, teal, yellow).
ImU32 ramp_color(float t, float alpha = 1.0f);

struct HeatmapHover {
    int row = -1, col = -1;
    bool hovered() const { return row >= 0; }
};

// Draws values[row * cols + col] scaled from [lo, hi] into a size-pixel box at the cursor and
// advances the cursor. `overlay` draws on top (bands, marks) given the box's corner and cell size.
HeatmapHover draw_heatmap(const char* id, const float* values, int rows, int cols, ImVec2 size, float lo, float hi,
                          const std::function<void(ImDrawList*, ImVec2 origin, ImVec2 cell)>& overlay = nullptr);

}  // namespace vkllm::studio
