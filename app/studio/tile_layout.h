// The studio's panels tiled over the window: no panel floats or overlaps another. The layout is
// columns left to right, each a stack of rows, each row panels side by side; every boundary is a
// splitter the user drags. Closed panels give their room to their neighbours, and one panel can
// be maximised to the whole area. Pure geometry, so tests can check it.
#pragma once

#include <array>
#include <vector>

#include <nlohmann/json.hpp>

#include "settings.h"

namespace vkllm::studio {

struct Rect {
    float x = 0, y = 0, w = 0, h = 0;
    bool empty() const { return w <= 0 || h <= 0; }
};

struct TileLayout {
    // Sizes are weights: an item's share of its parent among the items that are shown.
    struct Row {
        std::vector<int> panels;
        std::vector<float> widths;
        float height = 1;
        bool operator==(const Row&) const = default;
    };
    struct Column {
        std::vector<Row> rows;
        float width = 1;
        bool operator==(const Column&) const = default;
    };
    std::vector<Column> columns;
    bool operator==(const TileLayout&) const = default;
};
// Chat on the left; attention above the logit lens and architecture in the middle; activations,
// experts and telemetry on the right.
TileLayout default_layout();
// Every panel exactly once and every weight positive and finite.
bool valid_layout(const TileLayout& l);

struct Splitter {
    Rect r;               // where it can be grabbed
    bool vertical = true; // a vertical bar, dragged left and right
    int level = 0;        // 0: between columns, 1: between rows of `column`, 2: between panels of a row
    int column = 0, row = 0;
    int a = 0, b = 0;     // the items on either side (indices in their parent)
    float size_a = 0, size_b = 0;  // their sizes on screen (pixels along the drag)
};
struct Tiling {
    std::array<Rect, PanelCount> panels{};  // empty: not shown
    std::vector<Splitter> splitters;
};
// Lays the open panels out over `area` with `gap` pixels between neighbours (the splitters'
// handles). `maximised` >= 0 and open: that panel alone fills the area, no splitters.
Tiling tile(const TileLayout& l, const std::array<bool, PanelCount>& open, int maximised, Rect area, float gap);
// Moves a splitter by `delta` pixels, keeping both sides at least `min_px` wide (or high).
void drag_splitter(TileLayout& l, const Splitter& s, float delta, float min_px);

nlohmann::json layout_json(const TileLayout& l);
// A saved layout; the default when the JSON is not a valid one.
TileLayout layout_from_json(const nlohmann::json& j);

}  // namespace vkllm::studio
