// Legends for the coloured views: what a colour means, in the panel beside it.
#pragma once

#include <imgui.h>

namespace vkllm::studio {

// A token's background for the expert it went to (hue by expert), 0 for none.
ImU32 expert_color(int expert, int n_expert);
// A horizontal ramp (heatmap.h's ramp_color) from `lo_label` to `hi_label` with a caption,
// `alpha` as the view draws it. Wraps to the next line when the row is full.
void ramp_legend(const char* caption, const char* lo_label, const char* hi_label, float alpha = 1.0f);
// Swatches of the first experts' colours, numbered; "..." when there are more than fit.
void expert_legend(int n_expert);

}  // namespace vkllm::studio
