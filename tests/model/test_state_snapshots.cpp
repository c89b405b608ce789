// State snapshots (engine/model/state_snapshots.h): a recurrent state cannot forget positions,
// so the session keeps copies of it where eval calls end and truncate goes back to the newest
// one at or below its target, re-evaluating only the tokens after it. On zoo-hybrid (Mamba-2 and
// attention) and the random mamba2, lfm2 (short convolutions), rwkv7 and qwen35 (Gated DeltaNet)
// golden models: turn 1, turn 2, turn 3, back to the end of turn 1 (a snapshot), a different
// turn 2, then back to a position between two snapshots (a partial re-evaluation): the logits
// equal a fresh session's fed the same tokens, and generate() reports re-evaluating only the
// tokens after the snapshot.
// Speculative decoding on the hybrid (the target's rejected drafts are truncated away) gives
// plain greedy decoding's text.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "test_support.h"
#include "vkllm/generate.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

std::string zoo(const std::string& name) { return test::source_dir() + "/assets/zoo/" + name + ".gguf"; }

SessionOptions exact_options() {
    SessionOptions so;
    so.n_ctx = 128;
    so.kv_cache = KvCacheType::F32;  // the hybrid tests' exact mode
    return so;
}

std::vector<int32_t> slice(const std::vector<int32_t>& v, size_t from, size_t to) {
    return std::vector<int32_t>(v.begin() + long(from), v.begin() + long(to));
}

std::vector<int32_t> cat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// Largest difference between `got` (rows of the last tokens) and the same rows of a fresh
// session's logits over all of `tokens`.
double diff_from_fresh(const Model& m, const std::vector<int32_t>& tokens, const std::vector<float>& got) {
    Session fresh(m, exact_options());
    const std::vector<float> all = fresh.eval(tokens, /*all_logits=*/true);
    const size_t skip = all.size() - got.size();
    double d = 0;
    for (size_t i = 0; i < got.size(); ++i) d = std::max(d, double(std::fabs(got[i] - all[skip + i])));
    return d;
}

// Prompt tokens that generate() evaluated to reach `prompt` from the session's cache.
int evaluated_for(Session& s, const std::vector<int32_t>& prompt) {
    GenerateOptions o;
    o.max_tokens = 0;  // the prompt only
    const GenerateResult r = s.generate(prompt, o);
    EXPECT_EQ(r.reason, StopReason::MaxTokens) << r.message;
    return r.n_prompt_evaluated;
}

// `t` holds at least 46 tokens of the model's vocabulary.
void check_undo_and_edit(const Model& m, const std::vector<int32_t>& t) {
    ASSERT_GE(t.size(), 46u);
    const uint64_t errors_before = gpu::validation_error_count();
    const std::vector<int32_t> turn1 = slice(t, 0, 10), turn2 = slice(t, 10, 20), turn3 = slice(t, 20, 30);
    const std::vector<int32_t> other2 = slice(t, 30, 38), more = slice(t, 38, 46);
    Session s(m, exact_options());
    ASSERT_GT(s.recurrent_state_bytes(), 0u);
    s.eval(turn1);
    s.eval(turn2);  // a snapshot at 10, where turn 1 ended
    s.eval(turn3);  // ... and at 20
    EXPECT_EQ(s.state_snapshot_bytes(), 2 * s.recurrent_state_bytes());

    // Undo turns 2 and 3, say something else: the state comes back from the snapshot at 10.
    s.truncate(10);
    EXPECT_EQ(s.n_past(), 10);
    std::vector<float> got = s.eval(other2, true);
    EXPECT_LE(diff_from_fresh(m, cat(turn1, other2), got), 1e-3);

    // Back to 14, between the snapshots at 10 and 18: the state comes from 10, tokens 10..14
    // are evaluated again.
    s.truncate(14);
    got = s.eval(more, true);  // a snapshot at 14
    const std::vector<int32_t> kept = cat(turn1, slice(other2, 0, 4));
    EXPECT_LE(diff_from_fresh(m, cat(kept, more), got), 1e-3);

    // What truncate costs, as generate() counts it: nothing before a snapshot's position.
    const std::vector<int32_t> tail = slice(t, 0, 3);
    EXPECT_EQ(evaluated_for(s, cat(kept, tail)), 3);                  // the snapshot at 14
    EXPECT_EQ(evaluated_for(s, cat(slice(kept, 0, 12), tail)), 2 + 3);  // from 10, and the tail
    got = s.eval(more, true);
    EXPECT_LE(diff_from_fresh(m, cat(cat(slice(kept, 0, 12), tail), more), got), 1e-3);
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

TEST(StateSnapshots, ZooHybridUndoAndEdit) {
    auto m = Model::load(zoo("zoo-hybrid"));
    const std::vector<int32_t> t = m->tokenize(
        "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her "
        "friends. One day, she saw a big red ball under a tree and wanted to play with it.",
        true);
    check_undo_and_edit(*m, t);
}

class RandomRecurrentModel : public ::testing::TestWithParam<std::string> {};

TEST_P(RandomRecurrentModel, UndoAndEdit) {
    const std::string base = test::source_dir() + "/tests/golden/" + GetParam();
    auto m = Model::load(base + ".gguf");
    check_undo_and_edit(*m, test::read_ids(base + ".tokens.txt"));
}

INSTANTIATE_TEST_SUITE_P(Families, RandomRecurrentModel,
                         ::testing::Values("ssm/mamba2", "ssm/lfm2", "rwkv7/rwkv7", "deltanet/qwen35"),
                         [](const auto& info) { return info.param.substr(info.param.find('/') + 1); });

TEST(StateSnapshots, RingIsBoundedAndReportedWithTheState) {
    auto m = Model::load(zoo("zoo-hybrid"));
    Session s(*m, exact_options());
    for (int i = 0; i < 7; ++i) s.eval({int32_t(100 + i), int32_t(200 + i)});
    // Taken at 2, 4, ..., 12; the four newest kept.
    EXPECT_EQ(s.state_snapshot_bytes(), 4 * s.recurrent_state_bytes());
    // generate() keeps all but the prompt's last token: back to 6, a snapshot (the last token
    // alone evaluated), then back to 4, whose snapshot went out of the ring (all evaluated).
    EXPECT_EQ(evaluated_for(s, slice(s.tokens(), 0, 7)), 1);
    EXPECT_EQ(evaluated_for(s, slice(s.tokens(), 0, 5)), 5);
    s.reset();
    EXPECT_EQ(s.state_snapshot_bytes(), 0u);
}

TEST(StateSnapshots, SpeculativeDecodingOnTheHybridGivesGreedyText) {
    auto target = Model::load(zoo("zoo-hybrid"));
    auto draft_model = Model::load(zoo("zoo-dense"));
    const std::vector<int32_t> prompt = target->tokenize("Once upon a time, there was a little", true);
    GenerateOptions o;
    o.sampler.temperature = 0;
    o.max_tokens = 32;
    Session plain(*target, exact_options());
    const GenerateResult want = plain.generate(prompt, o);
    ASSERT_EQ(want.tokens.size(), 32u) << want.message;

    Session s(*target, exact_options()), draft(*draft_model, exact_options());
    o.draft = {&draft, 4};
    const GenerateResult got = s.generate(prompt, o);
    EXPECT_EQ(got.tokens, want.tokens) << "speculative: " << got.text << "\nplain: " << want.text;
    // Another model's drafts: some are rejected, so the hybrid went back to a snapshot.
    EXPECT_GT(got.draft_proposed, got.draft_accepted);
    EXPECT_EQ(s.tokens(), plain.tokens());
}

}  // namespace
}  // namespace vkllm
