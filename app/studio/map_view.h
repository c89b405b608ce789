// The zoom and pan of one heatmap, and the visible-range math behind it, with no ImGui in it.
// A view is the visible window of the map as fractions of its extent along each axis: x over
// the columns, y over the rows, [0, 1] when nothing is zoomed. The drawing code turns pixels
// into fractions of the box; everything here works in those fractions and in cells.
#pragma once

#include <algorithm>
#include <cmath>

namespace vkllm::studio {

// Integer cells [first, end) that a fractional window [lo, hi) of n cells touches.
struct CellRange {
    int first = 0, end = 0;
    int count() const { return end - first; }
};

struct MapView {
    double x0 = 0.0, x1 = 1.0;  // visible columns, as a fraction of all of them
    double y0 = 0.0, y1 = 1.0;  // visible rows

    bool zoomed() const { return x0 > 0.0 || x1 < 1.0 || y0 > 0.0 || y1 < 1.0; }
    void reset() { *this = MapView{}; }

    // Zooms by `factor` (> 1 in, < 1 out) keeping the map point under the cursor fixed; fx, fy
    // are the cursor's position in the box, as fractions of its width and height.
    void zoom_at(double fx, double fy, double factor, int rows, int cols) {
        if (!(factor > 0.0) || !std::isfinite(factor)) return;
        zoom_axis(x0, x1, std::clamp(fx, 0.0, 1.0), factor, cols);
        zoom_axis(y0, y1, std::clamp(fy, 0.0, 1.0), factor, rows);
    }

    // Moves the content by (dfx, dfy) box fractions, as a drag does: dragging right shows
    // columns further left. The window keeps its size and stays inside the map.
    void pan(double dfx, double dfy) {
        shift_axis(x0, x1, -dfx * (x1 - x0));
        shift_axis(y0, y1, -dfy * (y1 - y0));
    }

    // The cell under a point of the box (fractions of its width and height), clamped to the
    // visible cells.
    int col_at(double fx, int cols) const { return cell_at(x0, x1, fx, cols); }
    int row_at(double fy, int rows) const { return cell_at(y0, y1, fy, rows); }

    CellRange visible_cols(int cols) const { return visible(x0, x1, cols); }
    CellRange visible_rows(int rows) const { return visible(y0, y1, rows); }

    // Where cell boundary `i` (0..n) falls in the box, as a fraction of the box (outside [0, 1]
    // when it is out of view).
    double col_edge(int i, int cols) const { return edge(x0, x1, i, cols); }
    double row_edge(int i, int rows) const { return edge(y0, y1, i, rows); }

   private:
    // The narrowest window: one cell, so a zoomed map never shows less than a whole cell.
    static void zoom_axis(double& lo, double& hi, double f, double factor, int n) {
        const double min_span = n > 0 ? 1.0 / double(n) : 1.0;
        const double span = std::clamp((hi - lo) / factor, std::min(min_span, 1.0), 1.0);
        const double anchor = lo + f * (hi - lo);  // the map point under the cursor
        lo = anchor - f * span;
        hi = lo + span;
        shift_axis(lo, hi, 0.0);
    }
    static void shift_axis(double& lo, double& hi, double d) {
        const double span = hi - lo;
        lo = std::clamp(lo + d, 0.0, 1.0 - span);
        hi = lo + span;
    }
    static int cell_at(double lo, double hi, double f, int n) {
        if (n <= 0) return -1;
        const double at = (lo + std::clamp(f, 0.0, 1.0) * (hi - lo)) * double(n);
        const CellRange r = visible(lo, hi, n);  // the box's right or bottom edge is its last visible cell
        return std::clamp(int(std::floor(at)), r.first, r.end - 1);
    }
    static CellRange visible(double lo, double hi, int n) {
        if (n <= 0) return {};
        CellRange r;
        r.first = std::clamp(int(std::floor(lo * double(n) + 1e-9)), 0, n - 1);
        r.end = std::clamp(int(std::ceil(hi * double(n) - 1e-9)), r.first + 1, n);
        return r;
    }
    static double edge(double lo, double hi, int i, int n) {
        return n > 0 ? (double(i) / double(n) - lo) / (hi - lo) : 0.0;
    }
};

// Which cells along an axis get a label: every `step`-th one, the smallest step at which labels
// `label_px` wide (or tall) do not overlap on cells `cell_px` apart.
inline int label_step(double cell_px, double label_px) {
    if (!(cell_px > 0.0)) return 1 << 30;
    return std::max(1, int(std::ceil(label_px / cell_px)));
}

}  // namespace vkllm::studio
