#include "tile_layout.h"

#include <algorithm>
#include <cmath>

namespace vkllm::studio {

TileLayout default_layout() {
    TileLayout l;
    l.columns.push_back({{{{PanelChat}, {1}, 1}}, 0.28f});
    l.columns.push_back({{{{PanelAttention}, {1}, 0.6f}, {{PanelLens, PanelArchitecture}, {0.45f, 0.55f}, 0.4f}}, 0.40f});
    l.columns.push_back(
        {{{{PanelActivations}, {1}, 0.36f}, {{PanelExperts}, {1}, 0.28f}, {{PanelTelemetry}, {1}, 0.36f}}, 0.32f});
    return l;
}

bool valid_layout(const TileLayout& l) {
    std::array<int, PanelCount> seen{};
    auto ok = [](float w) { return std::isfinite(w) && w > 0; };
    for (const auto& c : l.columns) {
        if (!ok(c.width) || c.rows.empty()) return false;
        for (const auto& r : c.rows) {
            if (!ok(r.height) || r.panels.empty() || r.panels.size() != r.widths.size()) return false;
            for (size_t i = 0; i < r.panels.size(); ++i) {
                if (r.panels[i] < 0 || r.panels[i] >= PanelCount || !ok(r.widths[i])) return false;
                ++seen[size_t(r.panels[i])];
            }
        }
    }
    return std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; });
}

namespace {

// Splits `length` (less the gaps between shown items) among the shown items by weight; returns
// each item's [start, size), hidden ones size 0.
std::vector<std::pair<float, float>> split(const std::vector<float>& weights, const std::vector<bool>& shown, float start,
                                           float length, float gap) {
    float total = 0;
    int n = 0;
    for (size_t i = 0; i < weights.size(); ++i)
        if (shown[i]) total += weights[i], ++n;
    std::vector<std::pair<float, float>> out(weights.size(), {start, 0.0f});
    if (n == 0) return out;
    const float room = std::max(length - gap * float(n - 1), 0.0f);
    float at = start;
    for (size_t i = 0; i < weights.size(); ++i) {
        if (!shown[i]) continue;
        const float size = std::round(room * weights[i] / total);
        out[i] = {at, size};
        at += size + gap;
    }
    // Rounding: the last shown item ends exactly at the end.
    for (size_t i = weights.size(); i-- > 0;)
        if (shown[i]) {
            out[i].second = std::max(start + length - out[i].first, 0.0f);
            break;
        }
    return out;
}

// Adds a splitter in every gap between consecutive shown items.
void gaps(const std::vector<std::pair<float, float>>& spans, const std::vector<bool>& shown, float gap, Splitter proto,
          float across_start, float across_size, std::vector<Splitter>& out) {
    int prev = -1;
    for (int i = 0; i < int(spans.size()); ++i) {
        if (!shown[size_t(i)]) continue;
        if (prev >= 0) {
            Splitter s = proto;
            s.a = prev, s.b = i;
            s.size_a = spans[size_t(prev)].second, s.size_b = spans[size_t(i)].second;
            const float at = spans[size_t(prev)].first + spans[size_t(prev)].second;
            s.r = proto.vertical ? Rect{at, across_start, gap, across_size} : Rect{across_start, at, across_size, gap};
            out.push_back(s);
        }
        prev = i;
    }
}

}  // namespace

Tiling tile(const TileLayout& l, const std::array<bool, PanelCount>& open, int maximised, Rect area, float gap) {
    Tiling t;
    if (maximised >= 0 && maximised < PanelCount && open[size_t(maximised)]) {
        t.panels[size_t(maximised)] = area;
        return t;
    }
    auto row_shown = [&](const TileLayout::Row& r) {
        return std::any_of(r.panels.begin(), r.panels.end(), [&](int p) { return open[size_t(p)]; });
    };
    std::vector<float> col_w;
    std::vector<bool> col_shown;
    for (const auto& c : l.columns) {
        col_w.push_back(c.width);
        col_shown.push_back(std::any_of(c.rows.begin(), c.rows.end(), row_shown));
    }
    const auto cols = split(col_w, col_shown, area.x, area.w, gap);
    gaps(cols, col_shown, gap, Splitter{{}, true, 0, 0, 0, 0, 0}, area.y, area.h, t.splitters);
    for (size_t c = 0; c < l.columns.size(); ++c) {
        if (!col_shown[c]) continue;
        const auto& column = l.columns[c];
        std::vector<float> row_h;
        std::vector<bool> rshown;
        for (const auto& r : column.rows) row_h.push_back(r.height), rshown.push_back(row_shown(r));
        const auto rows = split(row_h, rshown, area.y, area.h, gap);
        gaps(rows, rshown, gap, Splitter{{}, false, 1, int(c), 0, 0, 0}, cols[c].first, cols[c].second, t.splitters);
        for (size_t r = 0; r < column.rows.size(); ++r) {
            if (!rshown[r]) continue;
            const auto& row = column.rows[r];
            std::vector<bool> pshown;
            for (int p : row.panels) pshown.push_back(open[size_t(p)]);
            const auto cells = split(row.widths, pshown, cols[c].first, cols[c].second, gap);
            gaps(cells, pshown, gap, Splitter{{}, true, 2, int(c), int(r), 0, 0}, rows[r].first, rows[r].second,
                 t.splitters);
            for (size_t i = 0; i < row.panels.size(); ++i)
                if (pshown[i])
                    t.panels[size_t(row.panels[i])] = {cells[i].first, rows[r].first, cells[i].second, rows[r].second};
        }
    }
    return t;
}

void drag_splitter(TileLayout& l, const Splitter& s, float delta, float min_px) {
    float *wa = nullptr, *wb = nullptr;
    if (s.level == 0) wa = &l.columns[size_t(s.a)].width, wb = &l.columns[size_t(s.b)].width;
    else if (s.level == 1) {
        auto& rows = l.columns[size_t(s.column)].rows;
        wa = &rows[size_t(s.a)].height, wb = &rows[size_t(s.b)].height;
    } else {
        auto& w = l.columns[size_t(s.column)].rows[size_t(s.row)].widths;
        wa = &w[size_t(s.a)], wb = &w[size_t(s.b)];
    }
    const float sum = s.size_a + s.size_b;
    if (sum <= 0) return;
    // The two sides share their pixels (and their weights) anew; neither below min_px.
    const float a = std::clamp(s.size_a + delta, std::min(min_px, sum / 2), std::max(sum - min_px, sum / 2));
    const float total = *wa + *wb;
    *wa = total * a / sum;
    *wb = total - *wa;
}

nlohmann::json layout_json(const TileLayout& l) {
    nlohmann::json cols = nlohmann::json::array();
    for (const auto& c : l.columns) {
        nlohmann::json rows = nlohmann::json::array();
        for (const auto& r : c.rows) {
            nlohmann::json names = nlohmann::json::array();
            for (int p : r.panels) names.push_back(panel_name(p));
            rows.push_back({{"panels", names}, {"widths", r.widths}, {"height", r.height}});
        }
        cols.push_back({{"rows", rows}, {"width", c.width}});
    }
    return cols;
}

TileLayout layout_from_json(const nlohmann::json& j) {
    try {
        TileLayout l;
        for (const auto& c : j) {
            TileLayout::Column col;
            col.width = c.at("width").get<float>();
            for (const auto& r : c.at("rows")) {
                TileLayout::Row row;
                row.height = r.at("height").get<float>();
                row.widths = r.at("widths").get<std::vector<float>>();
                for (const auto& name : r.at("panels")) {
                    int found = -1;
                    for (int p = 0; p < PanelCount; ++p)
                        if (name.get<std::string>() == panel_name(p)) found = p;
                    row.panels.push_back(found);
                }
                col.rows.push_back(std::move(row));
            }
            l.columns.push_back(std::move(col));
        }
        if (valid_layout(l)) return l;
    } catch (const nlohmann::json::exception&) {
    }
    return default_layout();
}

}  // namespace vkllm::studio
