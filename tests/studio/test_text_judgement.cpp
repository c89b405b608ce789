// The studio's whole-text judgement of an edit (judge_over_text): a second session holds the
// text before the edit while the studio's own session reads it after, one forward pass at a
// time; the numbers equal those of every position's logits, the session is left holding the
// text under the edit with its probes as they were.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "test_support.h"
#include "text_effect.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm::studio {
namespace {

TEST(TextJudgement, ZeroedWeightOverTheConversation) {
    auto model = Model::load(test::source_dir() + "/assets/zoo/zoo-dense.gguf");
    SessionOptions so;
    so.n_ctx = 128;
    so.n_batch = 8;  // several passes
    Session session(*model, so);
    const std::vector<int32_t> tokens = model->tokenize("Once upon a time, there was a little girl named Lily. She", true);
    ASSERT_GT(tokens.size(), 10u);
    const std::vector<float> plain = session.eval(tokens, /*all_logits=*/true);
    ProbeConfig probes;
    probes.residual_stats = true;
    session.set_probes(probes);

    const InterventionState before = weights_zeroed(*model, {});
    // The largest weight of one ffn_down row, so that zeroing it shows.
    WeightRef w{1, "ffn_down", 3, 0};
    float largest = 0;
    for (int64_t col = 0; col < model->info().layers[1].ffn.n_ff; ++col) {
        const float v = std::fabs(model->weight({1, "ffn_down", 3, col}));
        if (v > largest) largest = v, w.col = col;
    }
    model->set_weight(w, 0.0f);
    const InterventionState after = weights_zeroed(*model, {});
    ASSERT_EQ(after.weights.size(), 1u);
    SessionOptions whole = so;
    Session check(*model, whole);
    const std::vector<float> edited = check.eval(tokens, /*all_logits=*/true);

    const TextJudgement j = judge_over_text(*model, session, so, before, after);
    const TextEffect want = text_effect(plain, edited, tokens, model->n_vocab());
    ASSERT_EQ(j.text.positions, int(tokens.size()));
    for (size_t i = 0; i < tokens.size(); ++i) EXPECT_NEAR(j.text.kl[i], want.kl[i], 1e-6 + 1e-5 * want.kl[i]) << i;
    EXPECT_NEAR(j.text.perplexity_after, want.perplexity_after, 1e-6 * want.perplexity_after);
    EXPECT_FALSE(j.text.no_effect());
    const size_t V = size_t(model->n_vocab());
    EXPECT_EQ(j.next_after, std::vector<float>(edited.end() - long(V), edited.end()));
    EXPECT_EQ(j.next_before, std::vector<float>(plain.end() - long(V), plain.end()));
    EXPECT_EQ(session.tokens(), tokens);
    EXPECT_TRUE(session.probe_config().residual_stats);
    EXPECT_EQ(model->weight(w), 0.0f);
}

}  // namespace
}  // namespace vkllm::studio
