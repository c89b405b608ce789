// The lens grid's view-model (view_models.h lens_grid) from hand-made probes: a prompt step's
// LogitLensGrid and generated steps' newest positions become one layers x positions grid; a
// later step replaces the positions it ran; truncation drops columns.
#include <gtest/gtest.h>

#include "probe_history.h"
#include "view_models.h"

namespace vkllm::studio {
namespace {

LensToken token(int32_t id, float p) { return {id, "t" + std::to_string(id), p}; }

// A grid of `layers` at positions first.. (cols of them), k 2: cell (i, c) holds ids
// 100 * layer + position and -1 (probability 0 past the first).
ProbeResults grid_step(const std::vector<int>& layers, int first, int cols) {
    ProbeResults r;
    LogitLensGrid& g = r.logit_lens_grid;
    g.layers = layers;
    g.top_k = 2;
    for (int c = 0; c < cols; ++c) g.positions.push_back(first + c);
    for (int l : layers)
        for (int c = 0; c < cols; ++c) {
            g.cells.push_back(token(100 * l + first + c, 0.75f));
            g.cells.push_back({-1, "", 0.0f});
        }
    for (int l : layers) r.logit_lens.push_back({l, first + cols - 1, {token(100 * l + first + cols - 1, 0.75f)}});
    return r;
}

TEST(LensGridView, GridColumnsAndGeneratedStepsMakeOneGrid) {
    ProbeHistory h;
    h.add_step(grid_step({0, 2}, 0, 4), 0, 4, true);   // the prompt: positions 0..3
    ProbeResults step;                                   // a decode step without a grid
    step.logit_lens = {{2, 4, {token(999, 0.5f)}}, {0, 4, {token(998, 0.25f)}}};
    h.add_step(step, 4, 1, false);

    LensGrid g = lens_grid(h);
    ASSERT_EQ(g.layers, (std::vector<int>{0, 2}));
    ASSERT_EQ(g.positions, (std::vector<int>{0, 1, 2, 3, 4}));
    ASSERT_EQ(g.at(1, 2).size(), 1u);  // the -1 entry is not a token
    EXPECT_EQ(g.at(1, 2)[0].id, 202);
    EXPECT_EQ(g.at(0, 4)[0].id, 998);
    const std::vector<float> p = g.top_probs();
    EXPECT_FLOAT_EQ(p[0 * 5 + 4], 0.25f);
    EXPECT_FLOAT_EQ(p[1 * 5 + 0], 0.75f);

    // The same position run again (a regenerated token) replaces it.
    ProbeResults again;
    again.logit_lens = {{0, 4, {token(7, 0.125f)}}, {2, 4, {token(8, 0.125f)}}};
    h.add_step(again, 4, 1, false);
    g = lens_grid(h);
    ASSERT_EQ(g.cols(), 5);
    EXPECT_EQ(g.at(0, 4)[0].id, 7);

    // Truncated to 3 tokens: positions 3 and 4 go, from the history and from the kept eval.
    h.truncate(3);
    g = lens_grid(h);
    EXPECT_EQ(g.positions, (std::vector<int>{0, 1, 2}));
    ASSERT_FALSE(h.evals.empty());
    const LogitLensGrid& kept = h.evals.front()->results.logit_lens_grid;
    EXPECT_EQ(kept.positions, (std::vector<int>{0, 1, 2}));
    ASSERT_EQ(kept.cells.size(), 2u * 3u * 2u);
    EXPECT_EQ(kept.cell(1, 2)[0].id, 202);
}

}  // namespace
}  // namespace vkllm::studio
