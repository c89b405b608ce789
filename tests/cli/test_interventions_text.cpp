// Interventions judged over a whole text: the streamed evaluation (two sessions, one forward
// pass at a time, no position's logits kept) gives what the whole text's logits give; and
// `vkllm perplexity --effect-text` / `vkllm run --effect-text` report it, a planted super
// weight's damage and a redundant weight's "no effect".
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../app/common/intervention_effect.h"
#include "test_support.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

using Result = test::ShellResult;

const char* kText =
    "Once upon a time, there was a little girl named Lily. She liked to play in the park with her red ball. "
    "One day, the ball rolled under a big tree and a small dog ran after it.";

// A random llama whose layer 1 has a super weight at ffn_down[10, 20] (vkllm-random-model).
std::string planted_model() {
    static const std::string path = [] {
        const std::string bin = test::vkllm_bin();
        const std::string tool = bin.substr(0, bin.find_last_of('/') + 1) + "vkllm-random-model";
        const std::string out = test::temp_path("effect-planted.gguf");
        const Result r = test::shell(tool + " --out " + out + " --seed 11 --n-layer 3 --arch llama --plant-super-weight 1:10:20 " +
                                     "--vocab-from " + test::source_dir() + "/assets/zoo/zoo-dense.gguf 2>&1");
        EXPECT_EQ(r.code, 0) << r.out;
        return out;
    }();
    return path;
}

// The text's logits of every position in one eval, under a residual edit list.
std::vector<float> whole_text(const Model& model, const std::vector<int32_t>& tokens, int n_batch,
                              const std::vector<ResidualEdit>& edits) {
    SessionOptions so;
    so.n_ctx = int(tokens.size());
    so.n_batch = n_batch;
    Session s(model, so);
    s.set_residual_edits(edits);
    return s.eval(tokens, /*all_logits=*/true);
}

void expect_same(const app::TextEffect& got, const app::TextEffect& want) {
    ASSERT_EQ(got.positions, want.positions);
    for (int i = 0; i < want.positions; ++i)
        EXPECT_NEAR(got.kl[size_t(i)], want.kl[size_t(i)], 1e-6 + 1e-5 * want.kl[size_t(i)]) << "position " << i;
    EXPECT_NEAR(got.perplexity_before, want.perplexity_before, 1e-6 * want.perplexity_before);
    EXPECT_NEAR(got.perplexity_after, want.perplexity_after, 1e-6 * want.perplexity_after);
    ASSERT_EQ(got.moved.size(), want.moved.size());
    for (size_t i = 0; i < want.moved.size(); ++i) EXPECT_EQ(got.moved[i].position, want.moved[i].position);
}

// A weight zeroed and a running-mean residual edit over a text of several forward passes
// (n_batch 16, the last pass short): the streamed judgement equals the one computed from every
// position's logits, and leaves the model's weights edited.
TEST(InterventionText, StreamedEqualsWholeTextLogits) {
    auto model = Model::load(planted_model());
    const std::vector<int32_t> tokens = model->tokenize(kText, /*add_special=*/true);
    ASSERT_GT(tokens.size(), 40u);
    ASSERT_NE(tokens.size() % 16, 0u);
    const int V = model->n_vocab();
    const WeightRef super{1, "ffn_down", 10, 20};
    const std::vector<ResidualEdit> mean = {{2, 7, ResidualEdit::Mode::Mean, 0.0f}};

    const std::vector<float> plain = whole_text(*model, tokens, 16, {});
    const float was = model->set_weight(super, 0.0f);
    const std::vector<float> zeroed = whole_text(*model, tokens, 16, {});
    const std::vector<float> zeroed_mean = whole_text(*model, tokens, 16, mean);
    model->restore_weights();
    const std::vector<float> with_mean = whole_text(*model, tokens, 16, mean);

    SessionOptions so;
    so.n_ctx = int(tokens.size());
    so.n_batch = 16;
    Session before(*model, so), after(*model, so);
    const app::InterventionState none, zero{{{super, 0.0f}}, {}}, both{{{super, 0.0f}}, mean}, mean_only{{}, mean};

    std::vector<float> last_before, last_after;
    const app::TextEffect e = app::text_effect_streamed(*model, before, after, tokens, none, zero, 5, &last_before, &last_after);
    expect_same(e, app::text_effect(plain, zeroed, tokens, V));
    EXPECT_FALSE(e.no_effect());
    // A super weight's damage: the text's perplexity moves (random weights: either way).
    EXPECT_GT(std::fabs(e.perplexity_after - e.perplexity_before), 1e-3 * e.perplexity_before);
    EXPECT_EQ(model->weight(super), 0.0f);               // left as the after state has it
    EXPECT_EQ(last_after, std::vector<float>(zeroed.end() - V, zeroed.end()));
    EXPECT_EQ(last_before, std::vector<float>(plain.end() - V, plain.end()));
    EXPECT_EQ(after.tokens(), tokens);

    // Both sides edited (the weight in force before and after, the mean added), and the weight
    // restored with the mean kept: the weights switch back and forth between passes.
    expect_same(app::text_effect_streamed(*model, before, after, tokens, zero, both), app::text_effect(zeroed, zeroed_mean, tokens, V));
    expect_same(app::text_effect_streamed(*model, before, after, tokens, zero, mean_only),
                app::text_effect(zeroed, with_mean, tokens, V));
    EXPECT_EQ(model->weight(super), was);

    // The same state on both sides: no effect at any position.
    const app::TextEffect same = app::text_effect_streamed(*model, before, after, tokens, mean_only, mean_only);
    EXPECT_TRUE(same.no_effect());
    EXPECT_TRUE(same.moved.empty());
    EXPECT_EQ(same.perplexity_before, same.perplexity_after);

    EXPECT_THROW(app::text_effect_streamed(*model, before, before, tokens, none, zero), std::invalid_argument);
    EXPECT_THROW(app::text_effect_streamed(*model, before, after, {}, none, zero), std::invalid_argument);
    EXPECT_THROW(app::TextEffectAccumulator({0, V}, V), std::invalid_argument);
}

Result vkllm(const std::string& args, const std::string& stderr_to) {
    return test::shell(test::vkllm_bin() + " " + args + " 2>" + stderr_to);
}

// perplexity --effect-text --json: the "effect" object equals the whole-text computation; the
// planted weight damages the text, a token embedding row of a token the text never uses changes
// nothing ("no effect" over every position); run --effect-text prints the summary; a judgement
// with nothing to judge is a usage error.
TEST(InterventionText, PerplexityAndRunReportTheEffect) {
    const std::string m = planted_model();
    const std::string text = test::write_temp_file("effect-text.txt", kText);
    const std::string heldout = test::source_dir() + "/tests/golden/perplexity/heldout.txt";
    const std::string ppl = "perplexity -m " + m + " -f " + heldout + " -c 64 -b 16 --exact --json --effect-text " + text;
    Result r = vkllm(ppl + " --zero-weight 1:ffn_down:10:20", "/dev/null");
    ASSERT_EQ(r.code, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    ASSERT_TRUE(j.contains("effect")) << r.out;
    const nlohmann::json& e = j["effect"];

    auto model = Model::load(m);
    const std::vector<int32_t> tokens = model->tokenize(kText, /*add_special=*/true);
    const std::vector<float> plain = whole_text(*model, tokens, 16, {});
    model->set_weight({1, "ffn_down", 10, 20}, 0.0f);
    const app::TextEffect want = app::text_effect(plain, whole_text(*model, tokens, 16, {}), tokens, model->n_vocab());
    EXPECT_EQ(e["text"], text);
    ASSERT_EQ(e["positions"].get<int>(), int(tokens.size()));
    ASSERT_EQ(e["kl"].size(), tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i)
        EXPECT_NEAR(e["kl"][i].get<float>(), want.kl[i], 1e-6 + 1e-5 * want.kl[i]) << "position " << i;
    EXPECT_NEAR(e["perplexity_before"].get<double>(), want.perplexity_before, 1e-6 * want.perplexity_before);
    EXPECT_NEAR(e["perplexity_after"].get<double>(), want.perplexity_after, 1e-6 * want.perplexity_after);
    EXPECT_FALSE(e["no_effect"].get<bool>());
    ASSERT_EQ(e["moved"].size(), want.moved.size());
    const size_t top = size_t(want.moved[0].position);
    EXPECT_EQ(e["moved"][0]["position"].get<int>(), int(top));
    EXPECT_EQ(e["moved"][0]["token"], model->piece(tokens[top]));

    // A token the text never uses: its embedding row is never read.
    int32_t unused = 0;
    while (std::find(tokens.begin(), tokens.end(), unused) != tokens.end()) ++unused;
    r = vkllm(ppl + " --zero-weight -1:token_embd:" + std::to_string(unused) + ":3", "/dev/null");
    ASSERT_EQ(r.code, 0) << r.out;
    const nlohmann::json none = nlohmann::json::parse(r.out)["effect"];
    EXPECT_TRUE(none["no_effect"].get<bool>()) << none.dump();
    EXPECT_TRUE(none["moved"].empty());
    EXPECT_EQ(none["perplexity_before"], none["perplexity_after"]);

    r = vkllm("run -m " + m + " -p hi -n 1 --temp 0 --set-activation 1:10=0 --effect-text " + text, "&1 >/dev/null");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("the intervention over " + text + " (" + std::to_string(tokens.size()) + " tokens): perplexity"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("KL(before || after) per position"), std::string::npos) << r.out;

    r = vkllm("run -m " + m + " -p hi -n 1 --effect-text " + text, "&1 >/dev/null");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("give --zero-weight or --set-activation"), std::string::npos) << r.out;
    r = vkllm("run -m " + m + " -p hi -n 1 --set-activation 1:10=0 --effect-text " + heldout, "&1 >/dev/null");
    EXPECT_EQ(r.code, 2) << r.out;  // 1650 tokens, over the random model's context of 256
    EXPECT_NE(r.out.find("longer than the model's training context of 256 tokens"), std::string::npos) << r.out;
    r = vkllm("perplexity -m " + m + " -f " + heldout + " -c 64 --effect-text " + text, "&1 >/dev/null");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("--effect-text judges --zero-weight"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace vkllm
