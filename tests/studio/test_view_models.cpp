// The studio's view-models and probe history on hand-made probes (no GPU): the numbers each
// panel draws.
#include <gtest/gtest.h>

#include <cmath>

#include "head_detail.h"
#include "probe_history.h"
#include "studio_app.h"
#include "text_effect.h"
#include "view_models.h"

using namespace vkllm;
using namespace vkllm::studio;

namespace {

// One layer, one head, queries at `positions`, each row's probabilities given in full.
AttentionMap map_of(int layer, const std::vector<int>& positions, const std::vector<std::vector<float>>& rows) {
    AttentionMap m;
    m.layer = layer;
    m.n_head = 1;
    m.query_pos = positions;
    for (int k = 0; k <= positions.back(); ++k) m.key_pos.push_back(k);
    for (const auto& r : rows) {
        std::vector<float> full(m.key_pos.size(), 0.0f);
        std::copy(r.begin(), r.end(), full.begin());
        m.probs.insert(m.probs.end(), full.begin(), full.end());
    }
    return m;
}

}  // namespace

TEST(ProbeHistory, PromptRowsThenGeneratedRowsAppended) {
    ProbeHistory h;
    ProbeResults prompt;
    prompt.attention.push_back(map_of(0, {0, 1}, {{1.0f}, {0.25f, 0.75f}}));
    h.add_step(prompt, 0, 2, true);
    ProbeResults step;
    step.attention.push_back(map_of(0, {2}, {{0.5f, 0.25f, 0.25f}}));
    h.add_step(step, 2, 1, false);
    const AttentionHistory* a = h.attention_layer(0);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->query_pos, (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(a->n_key, 3);
    EXPECT_FLOAT_EQ(a->at(0, 1, 1), 0.75f);
    EXPECT_FLOAT_EQ(a->at(0, 1, 2), 0.0f);  // the future of row 1
    EXPECT_FLOAT_EQ(a->at(0, 2, 0), 0.5f);
    // The same map in the engine's shape: [head][query][key].
    const ProbeResults r = h.as_results();
    ASSERT_EQ(r.attention.size(), 1u);
    EXPECT_EQ(r.attention[0].n_key(), 3);
    EXPECT_FLOAT_EQ(r.attention[0].at(0, 2, 2), 0.25f);
    // Truncating to 2 tokens forgets row 2; a new step at position 2 replaces it.
    h.truncate(2);
    EXPECT_EQ(h.attention_layer(0)->query_pos.size(), 2u);
    h.add_step(step, 2, 1, false);
    EXPECT_EQ(h.attention_layer(0)->query_pos.size(), 3u);
}

TEST(ViewModels, HeadStatsAreEntropyFirstTokenMassAndDistance) {
    ProbeHistory h;
    ProbeResults r;
    r.attention.push_back(map_of(0, {0, 1, 2}, {{1.0f}, {0.5f, 0.5f}, {1.0f, 0.0f, 0.0f}}));
    h.add_step(r, 0, 3, true);
    const HeadStats s = head_stats(*h.attention_layer(0), 0);
    // Rows: entropy 0, ln 2, 0; first-token mass 1, 0.5, 1; distance 0, 0.5, 2.
    EXPECT_NEAR(s.entropy, std::log(2.0) / 3, 1e-6);
    EXPECT_NEAR(s.first_token_mass, 2.5 / 3, 1e-6);
    EXPECT_NEAR(s.mean_distance, 2.5 / 3, 1e-6);
    // What attends to key 0: rows 1 and 2 (later queries), 0.5 and 1.
    const auto to = attention_to_key(h, 0);
    ASSERT_EQ(to.size(), 1u);
    EXPECT_NEAR(to[0][0], 0.75, 1e-6);
}

TEST(ViewModels, MassiveActivationsNeedBothThresholds) {
    EXPECT_TRUE(is_massive(2000.0f, 1.0f));
    EXPECT_FALSE(is_massive(99.0f, 0.001f));     // not above 100
    EXPECT_FALSE(is_massive(500.0f, 1.0f));      // only 500x the median
    ProbeHistory h;
    ProbeResults r;
    ResidualStat s;
    s.layer = 3;
    s.max_abs = 1500;
    s.token = 1;
    s.channel = 7;
    s.median_abs = 0.5f;
    s.token_max_abs = {2.0f, 1500.0f, 3.0f};
    s.token_channel = {1, 7, 2};
    r.residual.push_back(s);
    h.add_step(r, 0, 3, true);
    const auto rows = activation_rows(h);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].token, 1);
    EXPECT_EQ(rows[0].channel, 7);
    EXPECT_FLOAT_EQ(rows[0].ratio, 3000.0f);
    EXPECT_TRUE(rows[0].massive);
    h.truncate(1);  // the spike's token is gone
    EXPECT_FLOAT_EQ(activation_rows(h)[0].max_abs, 2.0f);
}

TEST(ViewModels, SuperWeightCandidatesNeedTheSameToken) {
    FfnDownStat a{1, -1, 300.0f, 4, 10, 1.0f, 900.0f, 4, 20, 1.0f};  // pair on token 4
    FfnDownStat b{2, -1, 50.0f, 3, 11, 1.0f, 40.0f, 5, 21, 1.0f};    // different tokens
    const auto c = super_weight_candidates({b, a});
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].layer, 1);
    EXPECT_EQ(c[0].row, 20);  // W_down[output channel, input channel]
    EXPECT_EQ(c[0].col, 10);
    EXPECT_FLOAT_EQ(c[0].score, 300.0f * 900.0f);
}

TEST(ViewModels, ExpertBalance) {
    const ExpertBalance even = balance({2, 2, 2, 2});
    EXPECT_NEAR(even.cv, 0, 1e-6);
    EXPECT_NEAR(even.max_over_mean, 1, 1e-6);
    EXPECT_NEAR(even.entropy, 1, 1e-6);
    EXPECT_EQ(even.idle, 0);
    const ExpertBalance one = balance({8, 0, 0, 0});
    EXPECT_NEAR(one.max_over_mean, 4, 1e-6);
    EXPECT_NEAR(one.entropy, 0, 1e-6);
    EXPECT_EQ(one.idle, 3);
    EXPECT_NEAR(one.cv, std::sqrt(3.0), 1e-5);  // std 2*sqrt(3) over mean 2
}

TEST(ViewModels, ExpertViewSplitsPromptAndGeneration) {
    ModelInfo info;
    info.n_layer = 1;
    info.layers.resize(1);
    info.layers[0].ffn.kind = FfnKind::Moe;
    info.layers[0].ffn.n_expert = 4;
    info.layers[0].ffn.top_k = 2;
    ProbeHistory h;
    ProbeResults prompt;
    prompt.routing.push_back({0, 2, {0, 1}, {0, 1, 0, 2}, {0.6f, 0.4f, 0.7f, 0.3f}});
    h.add_step(prompt, 0, 2, true);
    ProbeResults step;
    step.routing.push_back({0, 2, {2}, {3, 0}, {0.9f, 0.1f}});
    h.add_step(step, 2, 1, false);
    const auto v = expert_view(h, info, 1);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].prompt_tokens, (std::vector<int>{2, 1, 1, 0}));
    EXPECT_EQ(v[0].generated_tokens, (std::vector<int>{1, 0, 0, 1}));
    EXPECT_EQ(v[0].rolling_tokens, (std::vector<int>{1, 0, 0, 1}));
    EXPECT_NEAR(v[0].prompt_weight[0], 1.3f, 1e-6);
    EXPECT_EQ(token_path(h, 1), (std::vector<std::vector<int32_t>>{{0, 2}}));
}

TEST(ViewModels, ArchitectureBlocksDescribeEachLayer) {
    ModelInfo info;
    info.layers.resize(2);
    info.layers[0].index = 0;
    info.layers[0].attention = {};
    info.layers[0].attention.kind = AttentionKind::SlidingWindow;
    info.layers[0].attention.window = 32;
    info.layers[0].attention.n_head = 4;
    info.layers[0].attention.n_head_kv = 2;
    info.layers[0].ffn.n_ff = 256;
    info.layers[1].index = 1;
    info.layers[1].attention.kind = AttentionKind::Mla;
    info.layers[1].attention.n_head = 4;
    info.layers[1].attention.kv_lora_rank = 32;
    info.layers[1].ffn.kind = FfnKind::Moe;
    info.layers[1].ffn.n_expert = 8;
    info.layers[1].ffn.top_k = 2;
    info.layers[1].ffn.n_shared_expert_ff = 64;
    const auto b = architecture_blocks(info);
    ASSERT_EQ(b.size(), 2u);
    EXPECT_EQ(b[0].attention, "sliding window 32, 4 heads (GQA 2:1), d 0");
    EXPECT_EQ(b[0].ffn, "dense SwiGLU 256");
    EXPECT_NE(b[1].attention.find("MLA 4 heads, latent 32"), std::string::npos);
    EXPECT_NE(b[1].ffn.find("MoE 8 experts top-2"), std::string::npos);
    EXPECT_NE(b[1].ffn.find("shared 64"), std::string::npos);
}

TEST(Settings, RoundTripAndBadValues) {
    Settings s;
    s.dark = false;
    s.generation.sampler.temperature = 0.3f;
    s.generation.sampler.top_k = 7;
    s.open[PanelExperts] = false;
    s.recent_models = {"/tmp/a.gguf"};
    const Settings back = settings_from_json(settings_json(s));
    EXPECT_FALSE(back.dark);
    EXPECT_FLOAT_EQ(back.generation.sampler.temperature, 0.3f);
    EXPECT_EQ(back.generation.sampler.top_k, 7);
    EXPECT_FALSE(back.open[PanelExperts]);
    EXPECT_EQ(back.recent_models, s.recent_models);
    // A wrong type or an invalid sampler keeps the defaults.
    const Settings bad = settings_from_json({{"dark", "yes"}, {"sampler", {{"top_p", 7.0}}}});
    EXPECT_TRUE(bad.dark);
    EXPECT_FLOAT_EQ(bad.generation.sampler.top_p, SamplerParams{}.top_p);
}

TEST(Options, PanelsAndErrors) {
    EXPECT_EQ(parse_panels("all"), (std::array<bool, PanelCount>{true, true, true, true, true, true, true}));
    const auto two = parse_panels("chat,experts");
    EXPECT_TRUE(two[PanelChat]);
    EXPECT_TRUE(two[PanelExperts]);
    EXPECT_FALSE(two[PanelAttention]);
    EXPECT_THROW(parse_panels("chat,bogus"), std::invalid_argument);
    const char* argv[] = {"vkllm-studio", "-n", "many"};
    EXPECT_THROW(parse_options(3, const_cast<char**>(argv)), std::invalid_argument);
    const char* exit_alone[] = {"vkllm-studio", "--exit"};
    EXPECT_THROW(parse_options(2, const_cast<char**>(exit_alone)), std::invalid_argument);
}

// The command line's numbers are checked as the CLI checks its options: `--temp nan` once parsed
// to NaN, failed the "< 0: unset" test and left the saved temperature in use without a word.
StudioOptions parse(std::vector<std::string> args) {
    args.insert(args.begin(), "vkllm-studio");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    return parse_options(int(argv.size()), argv.data());
}

std::string parse_error(std::vector<std::string> args) {
    try {
        parse(std::move(args));
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

TEST(Options, EveryNumberIsCheckedLikeTheCli) {
    struct Case {
        std::vector<std::string> args;
        std::string needle;
    };
    const Case bad[] = {
        {{"--temp", "nan"}, "option --temp must be a finite number, got nan"},
        {{"--temp", "NaN"}, "option --temp must be a finite number"},
        {{"--temp", "inf"}, "option --temp must be a finite number, got inf"},
        {{"--temp", "-inf"}, "option --temp must be a finite number"},
        {{"--temp", "1e999"}, "option --temp must be a finite number"},
        {{"--temp", "0.7x"}, "option --temp expects a number, got '0.7x'"},
        {{"--temp", ""}, "option --temp expects a number"},
        {{"--temp", " 0.7"}, "option --temp expects a number"},
        {{"--temp"}, "option --temp needs a value"},
        {{"--seed", "nan"}, "option --seed expects an integer"},
        {{"--seed", "1.5"}, "option --seed expects an integer"},
        {{"--seed", "-2"}, "option --seed is out of its range [-1, 9223372036854775807], got -2"},
        {{"--seed", "99999999999999999999"}, "option --seed is out of its range"},
        {{"-n", "-1"}, "option -n is out of its range [0, 2147483647], got -1"},
        {{"-n", "2.5"}, "option -n expects an integer"},
        {{"-n", "inf"}, "option -n expects an integer"},
        {{"-n", "4294967296"}, "option -n is out of its range"},
        {{"--scale", "nan"}, "option --scale must be a finite number"},
        {{"--scale", "5"}, "option --scale is out of its range [0.75, 4], got 5"},
        {{"--scale", "0"}, "option --scale is out of its range"},
        {{"--size", "800x600junk"}, "option --size (its height) expects an integer"},
        {{"--size", "800"}, "option --size wants WIDTHxHEIGHT"},
        {{"--size", "99999999999x600"}, "option --size (its width) is out of its range"},
        {{"--size", "100x600"}, "option --size (its width) is out of its range [320, 16384], got 100"},
        {{"--size", "nanx600"}, "option --size (its width) expects an integer"},
    };
    for (const Case& c : bad) {
        const std::string e = parse_error(c.args);
        EXPECT_NE(e.find(c.needle), std::string::npos) << c.args[0] << " " << (c.args.size() > 1 ? c.args[1] : "") << ": " << e;
    }
    // What is valid still is, with the CLI's meaning: a temperature <= 0 is greedy, -1 too.
    EXPECT_FALSE(parse({}).temperature.has_value());
    EXPECT_FLOAT_EQ(*parse({"--temp", "0.7"}).temperature, 0.7f);
    EXPECT_FLOAT_EQ(*parse({"--temp", "-1"}).temperature, -1.0f);
    EXPECT_FLOAT_EQ(*parse({"--temp", "0"}).temperature, 0.0f);
    EXPECT_EQ(parse({"--seed", "-1"}).seed, -1);
    EXPECT_EQ(parse({"--seed", "9223372036854775807"}).seed, 9223372036854775807);
    EXPECT_EQ(parse({"-n", "0"}).n_predict, 0);
    EXPECT_FLOAT_EQ(parse({"--scale", "1.5"}).scale, 1.5f);
    const StudioOptions size = parse({"--size", "800x600"});
    EXPECT_EQ(size.width, 800);
    EXPECT_EQ(size.height, 600);
}

// Without maps (a model over the probe budget) the overview comes from the GPU's summaries:
// one view per layer, each head's numbers weighted by the rows of every kept eval; a truncation
// drops the evals after the cut.
TEST(ViewModels, SummaryOverviewWeightsEvalsByRows) {
    ModelInfo info;
    info.n_layer = 2;
    info.layers.resize(2);
    info.layers[1].attention.kind = AttentionKind::SlidingWindow;
    info.layers[1].attention.window = 8;
    auto summary = [](int layer, int head, int rows, float entropy, float sink, float dist) {
        AttentionSummary a;
        a.layer = layer;
        a.head = head;
        a.rows = rows;
        a.entropy = entropy;
        a.sink_mass = sink;
        a.mean_distance = dist;
        return a;
    };
    ProbeHistory h;
    ProbeResults prompt;
    for (int l = 0; l < 2; ++l)
        for (int hd = 0; hd < 3; ++hd) prompt.attention_summary.push_back(summary(l, hd, 3, 1.0f, 0.5f, 2.0f));
    h.add_step(prompt, 0, 3, true);
    ProbeResults step;
    for (int l = 0; l < 2; ++l)
        for (int hd = 0; hd < 3; ++hd) step.attention_summary.push_back(summary(l, hd, 1, 2.0f, 0.1f, 6.0f));
    h.add_step(step, 3, 1, false);
    AttentionView v = attention_view(h, info);
    ASSERT_EQ(v.layers.size(), 2u);
    EXPECT_TRUE(v.layers[0].from_summary);
    EXPECT_EQ(v.layers[0].n_head, 3);
    EXPECT_EQ(v.layers[0].n_query, 4);
    EXPECT_FALSE(v.layers[1].global);
    EXPECT_EQ(v.layers[1].window, 8);
    const HeadStats& st = v.layers[1].heads[2];
    EXPECT_EQ(st.head, 2);
    EXPECT_NEAR(st.entropy, (3 * 1.0 + 2.0) / 4, 1e-6);
    EXPECT_NEAR(st.first_token_mass, (3 * 0.5 + 0.1) / 4, 1e-6);
    EXPECT_NEAR(st.mean_distance, (3 * 2.0 + 6.0) / 4, 1e-6);
    h.truncate(3);
    v = attention_view(h, info);
    EXPECT_NEAR(v.layers[0].heads[0].entropy, 1.0, 1e-6);
    EXPECT_EQ(v.layers[0].n_query, 3);
}

namespace vkllm::studio {
namespace {

// The selected head's GPU detail: the thumbnail of the eval with the most rows, the newest row's
// top keys (empty places left out), and a truncation that cuts an eval drops its thumbnails and
// its rows' top keys past the cut.
TEST(ViewModels, HeadDetailTakesThePromptsThumbnailAndTheNewestTopKeys) {
    auto top = [](int first, int rows, int key) {
        AttentionTopK t;
        t.layer = 1;
        t.head = 2;
        t.k = 2;
        for (int q = 0; q < rows; ++q) {
            t.query_pos.push_back(first + q);
            t.key_pos.insert(t.key_pos.end(), {key + q, -1});
            t.probs.insert(t.probs.end(), {0.75f, 0.0f});
        }
        return t;
    };
    auto thumb = [](int first, int rows, float v) {
        AttentionThumbnail t;
        t.layer = 1;
        t.head = 2;
        t.cell = 2;
        t.query_first = first;
        t.rows = rows;
        t.cols = 3;
        t.max_prob.assign(size_t(rows) * 3, v);
        return t;
    };
    ProbeHistory h;
    ProbeResults prompt;
    prompt.attention_top_k = {top(0, 5, 0)};
    prompt.attention_thumbnails = {thumb(0, 3, 0.5f)};
    h.add_step(prompt, 0, 5, true);
    ProbeResults step;
    step.attention_top_k = {top(5, 1, 3)};
    step.attention_thumbnails = {thumb(4, 1, 0.25f)};
    h.add_step(step, 5, 1, false);
    HeadDetailView d = head_detail(h, 1, 2);
    ASSERT_TRUE(d.has_thumbnail);
    EXPECT_EQ(d.thumbnail.rows, 3);
    EXPECT_EQ(d.thumbnail.at(2, 2), 0.5f);
    ASSERT_TRUE(d.has_top);
    EXPECT_EQ(d.query_pos, 5);
    ASSERT_EQ(d.top.size(), 1u);
    EXPECT_EQ(d.top[0].first, 3);
    EXPECT_FALSE(head_detail(h, 0, 2).has_top);
    h.truncate(3);  // inside the prompt
    d = head_detail(h, 1, 2);
    EXPECT_FALSE(d.has_thumbnail);
    ASSERT_TRUE(d.has_top);
    EXPECT_EQ(d.query_pos, 2);
    EXPECT_EQ(d.top[0].first, 2);
}

}  // namespace
}  // namespace vkllm::studio

namespace vkllm::studio {
namespace {

// Per-position KL and the text's perplexity: an edit that changes one position's logits moves
// that position alone; identical logits are "no effect"; bad sizes are refused.
TEST(TextEffect, PerPositionKlPerplexityAndNoEffect) {
    const int V = 3;
    const std::vector<int32_t> tokens = {0, 1, 2, 1};
    std::vector<float> before = {0, 0, 0, 1, 2, 0, 0, 0, 3, 0, 1, 0};
    std::vector<float> after = before;
    TextEffect same = text_effect(before, after, tokens, V);
    EXPECT_EQ(same.positions, 4);
    EXPECT_TRUE(same.no_effect());
    EXPECT_TRUE(same.moved.empty());
    EXPECT_DOUBLE_EQ(same.perplexity_before, same.perplexity_after);
    // Perplexity: exp(mean -log p(next)) over tokens 1..3 (rows 0..2).
    auto lp = [](const std::vector<float>& row, int v) {
        double z = 0;
        for (float x : row) z += std::exp(double(x));
        return double(row[size_t(v)]) - std::log(z);
    };
    const double nll = -(lp({0, 0, 0}, 1) + lp({1, 2, 0}, 2) + lp({0, 0, 3}, 1)) / 3;
    EXPECT_NEAR(same.perplexity_before, std::exp(nll), 1e-9);
    after[2 * V + 1] = 4;  // position 2 now favours token 1, the text's next token
    TextEffect e = text_effect(before, after, tokens, V);
    EXPECT_FALSE(e.no_effect());
    ASSERT_EQ(e.moved.size(), 1u);
    EXPECT_EQ(e.moved[0].position, 2);
    EXPECT_GT(e.kl[2], 0.1f);
    EXPECT_EQ(e.kl[0], 0.0f);
    EXPECT_LT(e.perplexity_after, e.perplexity_before);
    EXPECT_NEAR(e.mean_kl, e.kl[2] / 4, 1e-7);
    EXPECT_THROW(text_effect(before, std::vector<float>(3), tokens, V), std::invalid_argument);
}

}  // namespace
}  // namespace vkllm::studio

// The linked text view's weights: one head's row, or the mean over heads, zero past the query.
TEST(ViewModels, AttentionFromQuery) {
    AttentionHistory a;
    a.n_head = 2;
    a.query_pos = {1, 2};
    a.n_key = 3;
    a.rows = {{0.25f, 0.75f, /* head 1 */ 1.0f, 0.0f}, {0.5f, 0.25f, 0.25f, /* head 1 */ 0.0f, 0.0f, 1.0f}};
    const std::vector<float> h1 = attention_from_query(a, 1, 2);
    ASSERT_EQ(h1.size(), 3u);
    EXPECT_FLOAT_EQ(h1[2], 1.0f);
    const std::vector<float> mean = attention_from_query(a, -1, 1);
    ASSERT_EQ(mean.size(), 3u);
    EXPECT_FLOAT_EQ(mean[0], 0.625f);
    EXPECT_FLOAT_EQ(mean[1], 0.375f);
    EXPECT_FLOAT_EQ(mean[2], 0.0f);  // a causal row has no key after its query
    EXPECT_TRUE(attention_from_query(a, 0, 0).empty());  // position 0 has no row in this map
    EXPECT_TRUE(attention_from_query(a, 2, 1).empty());  // no head 2
}

// ALiBi's bias: -m |q - k| for the keys a query sees, -inf after a causal query; every key for
// a bidirectional row; the slope read per layer and head, 0 without ALiBi.
TEST(ViewModels, AlibiSlopeAndBiasMap) {
    const std::vector<float> causal = alibi_bias_map({1, 3}, 4, 0.5f, true);
    ASSERT_EQ(causal.size(), 8u);
    EXPECT_FLOAT_EQ(causal[0], -0.5f);
    EXPECT_FLOAT_EQ(causal[1], 0.0f);
    EXPECT_TRUE(std::isinf(causal[2]) && causal[2] < 0);
    EXPECT_FLOAT_EQ(causal[4], -1.5f);
    EXPECT_FLOAT_EQ(causal[7], 0.0f);
    const std::vector<float> both = alibi_bias_map({1}, 3, 0.25f, false);
    EXPECT_FLOAT_EQ(both[2], -0.25f);
    ModelInfo info;
    info.layers.resize(2);
    info.layers[1].attention.alibi_slopes = {0.5f, 0.25f};
    EXPECT_FLOAT_EQ(alibi_slope(info, 1, 1), 0.25f);
    EXPECT_EQ(alibi_slope(info, 0, 1), 0.0f);  // no ALiBi in layer 0
    EXPECT_EQ(alibi_slope(info, 1, 2), 0.0f);  // no head 2
    EXPECT_EQ(alibi_slope(info, 5, 0), 0.0f);
}
