// The heatmaps' zoom and pan (map_view.h): the visible window clamps to the map, the point under
// the cursor stays put while zooming, drags pan, and hover and labels name the right cells.
#include <gtest/gtest.h>

#include "map_view.h"

using namespace vkllm::studio;

TEST(MapView, StartsWholeAndResets) {
    MapView v;
    EXPECT_FALSE(v.zoomed());
    EXPECT_EQ(v.visible_cols(37).first, 0);
    EXPECT_EQ(v.visible_cols(37).end, 37);
    v.zoom_at(0.3, 0.6, 4.0, 11, 37);
    EXPECT_TRUE(v.zoomed());
    v.reset();
    EXPECT_FALSE(v.zoomed());
}

TEST(MapView, ZoomKeepsTheCellUnderTheCursor) {
    MapView v;
    const int rows = 53, cols = 301;
    const double fx = 0.71, fy = 0.23;
    const int col = v.col_at(fx, cols), row = v.row_at(fy, rows);
    v.zoom_at(fx, fy, 8.0, rows, cols);
    EXPECT_NEAR(v.x1 - v.x0, 1.0 / 8.0, 1e-12);
    EXPECT_EQ(v.col_at(fx, cols), col);
    EXPECT_EQ(v.row_at(fy, rows), row);
    // Zooming back out by the same factor gives the whole map again.
    v.zoom_at(fx, fy, 1.0 / 8.0, rows, cols);
    EXPECT_FALSE(v.zoomed());
}

TEST(MapView, ClampsToTheMapAndToOneCell) {
    MapView v;
    const int rows = 7, cols = 13;
    // At the right edge, zooming keeps the window inside [0, 1].
    v.zoom_at(1.0, 1.0, 3.0, rows, cols);
    EXPECT_NEAR(v.x1, 1.0, 1e-12);
    EXPECT_GE(v.x0, 0.0);
    // However far in, at least one cell stays in view.
    for (int i = 0; i < 40; ++i) v.zoom_at(0.5, 0.5, 2.0, rows, cols);
    EXPECT_NEAR(v.x1 - v.x0, 1.0 / cols, 1e-12);
    EXPECT_NEAR(v.y1 - v.y0, 1.0 / rows, 1e-12);
    EXPECT_GE(v.visible_cols(cols).count(), 1);
    // Zooming out past the whole map stops at it.
    v.zoom_at(0.5, 0.5, 1e-3, rows, cols);
    EXPECT_FALSE(v.zoomed());
    // Nonsense factors change nothing.
    v.zoom_at(0.5, 0.5, 0.0, rows, cols);
    v.zoom_at(0.5, 0.5, -2.0, rows, cols);
    EXPECT_FALSE(v.zoomed());
}

TEST(MapView, DragPansAndStopsAtTheEdges) {
    MapView v;
    const int rows = 100, cols = 100;
    v.zoom_at(0.5, 0.5, 4.0, rows, cols);  // columns and rows 0.375 .. 0.625
    EXPECT_NEAR(v.x0, 0.375, 1e-12);
    // Dragging right by half the box shows what is left of it: half of the window's width.
    v.pan(0.5, 0.0);
    EXPECT_NEAR(v.x0, 0.375 - 0.125, 1e-12);
    EXPECT_NEAR(v.x1 - v.x0, 0.25, 1e-12);
    // A long drag stops at the map's edge, keeping the window's size.
    v.pan(10.0, -10.0);
    EXPECT_NEAR(v.x0, 0.0, 1e-12);
    EXPECT_NEAR(v.y1, 1.0, 1e-12);
    EXPECT_NEAR(v.y1 - v.y0, 0.25, 1e-12);
    // Unzoomed, nothing pans.
    MapView w;
    w.pan(0.3, 0.3);
    EXPECT_FALSE(w.zoomed());
}

TEST(MapView, VisibleCellsAndEdges) {
    MapView v;
    v.x0 = 0.25, v.x1 = 0.5;  // columns 2.5 .. 5 of 10
    const CellRange c = v.visible_cols(10);
    EXPECT_EQ(c.first, 2);  // a partly shown cell counts
    EXPECT_EQ(c.end, 5);
    EXPECT_NEAR(v.col_edge(3, 10), 0.2, 1e-12);  // cell 3 starts a fifth into the box
    EXPECT_LT(v.col_edge(2, 10), 0.0);           // cell 2 starts left of it
    EXPECT_EQ(v.col_at(0.0, 10), 2);
    EXPECT_EQ(v.col_at(0.999, 10), 4);
    EXPECT_EQ(v.col_at(5.0, 10), 4);  // clamped to the view's last cell
    EXPECT_EQ(v.col_at(0.5, 0), -1);  // an empty map has no cell
}

TEST(MapView, LabelStep) {
    EXPECT_EQ(label_step(20.0, 15.0), 1);  // a label per cell where they fit
    EXPECT_EQ(label_step(1.3, 30.0), 24);  // a 256-token map in 330 pixels: every 24th
    EXPECT_GT(label_step(0.0, 10.0), 1000000);
}
