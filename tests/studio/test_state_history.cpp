// The studio's State window data: the probe history stitches each head's state norms and decays
// and the Mamba-2 mixing maps by position over a prompt and generated steps and forgets the
// tail on truncation; the worker's probe selection asks the engine for them on a Mamba-2 golden
// model within the probe budget, and for nothing on a model without recurrent layers.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine_worker.h"
#include "probe_history.h"
#include "test_support.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

using namespace vkllm;
using namespace vkllm::studio;

namespace {

StateProbe trace(int layer, int head, int first, int n) {
    StateProbe p;
    p.layer = layer, p.head = head, p.kind = "mamba2";
    for (int t = 0; t < n; ++t) {
        p.positions.push_back(first + t);
        p.norm.push_back(float(first + t + 1));
        p.decay.push_back(0.5f);
    }
    return p;
}

AttentionMap mixing(int layer, int head, int first, int n) {
    AttentionMap m;
    m.kind = MapKind::StateMixing;
    m.layer = layer, m.head = head, m.n_head = 1;
    for (int q = first; q < first + n; ++q) m.query_pos.push_back(q);
    for (int k = 0; k < first + n; ++k) m.key_pos.push_back(k);
    for (int q = first; q < first + n; ++q)
        for (int k = 0; k < first + n; ++k) m.probs.push_back(k <= q ? float(q * 100 + k) : 0.0f);
    return m;
}

TEST(StateHistory, StitchesStepsAndTruncates) {
    ProbeHistory h;
    ProbeResults prompt;
    prompt.state = {trace(2, 1, 0, 5), trace(0, 0, 0, 5)};
    prompt.state_maps = {mixing(0, 1, 0, 5)};
    h.add_step(prompt, 0, 5, true);
    ProbeResults step;
    step.state = {trace(0, 0, 5, 1), trace(2, 1, 5, 1)};
    step.state_maps = {mixing(0, 1, 5, 1)};
    h.add_step(step, 5, 1, false);

    ASSERT_EQ(h.state.size(), 2u);
    EXPECT_EQ(h.state[0].layer, 0);  // by layer
    EXPECT_EQ(h.state[1].layer, 2);
    EXPECT_EQ(h.state[0].positions, (std::vector<int>{0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(h.state[0].norm.back(), 6.0f);
    const AttentionHistory* m = h.state_map(0, 1);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(h.state_map(0, 0), nullptr);
    EXPECT_EQ(m->query_pos.size(), 6u);
    EXPECT_EQ(m->n_key, 6);
    EXPECT_EQ(m->at(0, 5, 3), 503.0f);
    EXPECT_EQ(m->at(0, 2, 4), 0.0f);  // the future

    // Editing from position 3 drops the rows and tokens at and after it.
    h.truncate(3);
    EXPECT_EQ(h.state[1].positions, (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(h.state[1].decay.size(), 3u);
    EXPECT_EQ(h.state_map(0, 1)->query_pos.size(), 3u);
    EXPECT_EQ(h.state_map(0, 1)->n_key, 3);
}

TEST(StateHistory, TheSelectionAsksForStateAndMapsWithinTheBudget) {
    auto model = Model::load(test::source_dir() + "/tests/golden/ssm/nemotron_h.gguf");
    const ModelInfo& info = model->info();
    int mamba2 = -1, attention = -1;
    for (int l = 0; l < info.n_layer; ++l) {
        if (has_state_map(info.layers[size_t(l)]) && mamba2 < 0) mamba2 = l;
        if (!has_state(info.layers[size_t(l)]) && attention < 0) attention = l;
    }
    ASSERT_GE(mamba2, 0);
    ASSERT_GE(attention, 0);
    ProbeSelection s;
    s.state = true;
    s.state_map_layer = mamba2;
    SessionOptions so;
    so.n_ctx = 64;
    so.probes = probe_config(s, info, so.n_ctx);
    EXPECT_TRUE(so.probes.state);
    ASSERT_EQ(int(so.probes.state_maps.size()), info.layers[size_t(mamba2)].ssm.n_head);
    Session session(*model, so);
    session.eval(model->tokenize("Once upon a time", true));
    const ProbeResults& r = session.probes();
    EXPECT_FALSE(r.state.empty());
    ASSERT_EQ(r.state_maps.size(), so.probes.state_maps.size());
    EXPECT_GT(r.state_maps[0].n_query(), 0);
    // A layer without a state map asks for none.
    s.state_map_layer = attention;
    EXPECT_TRUE(probe_config(s, info, 64).state_maps.empty());
}

}  // namespace
