// The attention probes over several passes: maps capped to the newest rows, maps across passes
// equal to one pass (with the window's and the future's zeros) and routing that adds up to the
// expert load, gpt-oss's sink probabilities completing each row, and the GPU's per-head summaries
// and single-head tiles against the CPU's of the full maps. Part of model_test_probes
// (tests/model/test_probes.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "cpu/ref_attention_summary.h"
#include "gpu_test.h"
#include "probe_test.h"

namespace vkllm {
namespace {

using Probes = test::GpuTest;
using test::expect_last_lens_is_the_output;
using test::gptoss_model;
using test::kProbeText;
using test::prompt_of;
using test::zoo_model;

TEST_F(Probes, AttentionRowsAreCappedToTheNewest) {
    auto model = zoo_model("zoo-dense");
    SessionOptions so;
    so.kv_cache = KvCacheType::F32;  // exact, as the reference forward keeps K/V
    so.n_batch = 5;
    so.probes.attention_layers = {1};
    so.probes.attention_max_rows = 8;
    Session capped(*model, so);
    so.probes.attention_max_rows = 1024;
    Session full(*model, so);
    const auto prompt = prompt_of(*model, kProbeText);
    capped.eval(prompt);
    full.eval(prompt);
    const AttentionMap& c = capped.probes().attention[0];
    const AttentionMap& f = full.probes().attention[0];
    ASSERT_EQ(c.n_query(), 8);
    ASSERT_EQ(f.n_query(), int(prompt.size()));
    const int skip = f.n_query() - 8;
    for (int q = 0; q < 8; ++q) {
        EXPECT_EQ(c.query_pos[size_t(q)], f.query_pos[size_t(q + skip)]);
        for (int h = 0; h < c.n_head; ++h)
            for (int k = 0; k < c.n_key(); ++k) ASSERT_EQ(c.at(h, q, k), f.at(h, q + skip, k));
    }
}

// The zoo's other families: the maps of a prompt run in passes of 7 equal those of one pass,
// with the window's and the future's zeros; routing per token adds up to the expert load.
class ZooProbes : public Probes, public ::testing::WithParamInterface<std::string> {};

TEST_P(ZooProbes, MapsAcrossPassesEqualOnePassAndRoutingAddsUp) {
    auto model = zoo_model(GetParam());
    const auto& spec = model->internals().spec();
    const int L = spec.n_layer;
    // Longer than zoo-swa's window of 32.
    const std::string text = GetParam() == "zoo-swa" ? std::string(kProbeText) + " " + kProbeText : std::string(kProbeText);
    const auto prompt = prompt_of(*model, text);
    const int T = int(prompt.size());
    ProbeResults results[2];
    std::vector<float> last_logits;
    for (int run = 0; run < 2; ++run) {
        SessionOptions so;
        so.kv_cache = KvCacheType::F32;  // exact, as the reference forward keeps K/V
        so.n_batch = run == 0 ? 7 : 256;
        for (int l = 0; l < L; ++l) so.probes.attention_layers.push_back(l);
        so.probes.routing = true;
        so.probes.expert_load = true;
        so.probes.ffn_down = true;
        so.probes.logit_lens_layers = {0, L - 1};
        Session s(*model, so);
        auto logits = s.eval(prompt);
        results[run] = s.probes();
        if (run == 0) {
            last_logits = logits;
            expect_last_lens_is_the_output(results[0], logits, L, T - 1);
            // Routing of every token, consistent with the expert load of the prompt.
            for (const RoutingProbe& rp : results[0].routing) {
                ASSERT_EQ(rp.positions.size(), size_t(T));
                ASSERT_EQ(rp.experts.size(), size_t(T) * size_t(rp.top_k));
                const auto& load = *std::find_if(s.probes().expert_load_prefill.begin(), s.probes().expert_load_prefill.end(),
                                                 [&](const ExpertLoad& e) { return e.layer == rp.layer; });
                std::vector<float> count(load.tokens.size(), 0.0f), weight(load.tokens.size(), 0.0f);
                for (size_t p = 0; p < rp.experts.size(); ++p) {
                    count[size_t(rp.experts[p])] += 1;
                    weight[size_t(rp.experts[p])] += rp.weights[p];
                }
                for (size_t e = 0; e < count.size(); ++e) {
                    EXPECT_EQ(count[e], load.tokens[e]) << "layer " << rp.layer << " expert " << e;
                    EXPECT_NEAR(weight[e], load.weight_sum[e], 1e-4) << "layer " << rp.layer << " expert " << e;
                }
                // ffn_down has an entry for every expert that got a token, and for none other.
                std::set<int> with_stats;
                for (const FfnDownStat& f : results[0].ffn_down)
                    if (f.layer == rp.layer && f.expert >= 0) with_stats.insert(f.expert);
                std::set<int> used(rp.experts.begin(), rp.experts.end());
                EXPECT_EQ(with_stats, used);
            }
        }
    }
    int moe_layers = 0;
    for (const auto& ly : spec.layers) moe_layers += ly.ffn.moe.n_expert > 0;
    EXPECT_EQ(results[0].routing.size(), size_t(moe_layers));
    ASSERT_EQ(results[0].attention.size(), size_t(L));
    EXPECT_GT(results[0].passes, 1);
    for (int l = 0; l < L; ++l) {
        const AttentionMap& a = results[0].attention[size_t(l)];
        const AttentionMap& b = results[1].attention[size_t(l)];
        ASSERT_EQ(a.n_query(), T);
        ASSERT_EQ(b.n_query(), T);
        ASSERT_EQ(a.n_key(), T);
        const int window = spec.layers[size_t(l)].attn.window;
        EXPECT_EQ(a.window, window);
        for (int h = 0; h < a.n_head; ++h)
            for (int q = 0; q < T; ++q) {
                double sum = 0;
                for (int k = 0; k < T; ++k) {
                    const float p = a.at(h, q, k);
                    sum += p;
                    ASSERT_NEAR(p, b.at(h, q, k), 1e-4) << "layer " << l << " head " << h << " q " << q << " k " << k;
                    if (k > q || (window > 0 && k <= q - window)) { ASSERT_EQ(p, 0.0f) << "layer " << l << " q " << q << " k " << k; }
                }
                EXPECT_NEAR(sum, 1.0, 1e-5);
            }
    }
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooProbes, ::testing::Values("zoo-swa", "zoo-moe", "zoo-mla"),
                         test::ModelParamName());

// gpt-oss's learned sinks: every row of every pass plus its sink probability sums to 1.
TEST_F(Probes, SinkProbabilityCompletesEveryRow) {
    auto model = gptoss_model();
    const auto& spec = model->internals().spec();
    SessionOptions so;
    so.kv_cache = KvCacheType::F32;  // exact, as the reference forward keeps K/V
    so.n_batch = 5;
    for (int l = 0; l < spec.n_layer; ++l) so.probes.attention_layers.push_back(l);
    Session s(*model, so);
    std::vector<int32_t> prompt;
    for (int i = 0; i < 13; ++i) prompt.push_back(int32_t((i * 37 + 11) % spec.n_vocab));
    // The prompt in three passes, then a decode step.
    for (const std::vector<int32_t>& toks : {prompt, std::vector<int32_t>{7}}) {
        s.eval(toks);
        for (const AttentionMap& m : s.probes().attention) {
            ASSERT_EQ(m.n_query(), int(toks.size()));
            ASSERT_EQ(m.sink.size(), size_t(m.n_head) * size_t(m.n_query())) << "layer " << m.layer;
            float largest = 0;
            for (int h = 0; h < m.n_head; ++h)
                for (int q = 0; q < m.n_query(); ++q) {
                    const float sink = m.sink[size_t(h) * size_t(m.n_query()) + size_t(q)];
                    largest = std::max(largest, sink);
                    double sum = sink;
                    for (int k = 0; k < m.n_key(); ++k) sum += m.at(h, q, k);
                    EXPECT_NEAR(sum, 1.0, 1e-5) << "layer " << m.layer << " head " << h << " query " << q;
                }
            EXPECT_GT(largest, 0.0f);
        }
    }
}

// The GPU's attention summaries against cpu::attention_summary of the full maps of the same
// eval, and single-head maps (with a tile) against the full map's head: over several passes
// (n_batch 7), a ring-wrapped sliding-window cache (zoo-swa: 38 slots), GQA, MLA and gpt-oss's
// sinks, then a decode step.
class SummaryProbes : public Probes, public ::testing::WithParamInterface<std::string> {};

void expect_summaries_match_maps(const ProbeResults& r, int n_layer) {
    ASSERT_FALSE(r.attention_summary.empty());
    size_t checked = 0;
    for (const AttentionMap& m : r.attention) {
        if (m.head >= 0) continue;
        for (const AttentionSummary& ref : cpu::attention_summary(m)) {
            auto got = std::find_if(r.attention_summary.begin(), r.attention_summary.end(),
                                    [&](const AttentionSummary& s) { return s.layer == ref.layer && s.head == ref.head; });
            ASSERT_NE(got, r.attention_summary.end()) << "layer " << ref.layer << " head " << ref.head;
            const std::string where = "layer " + std::to_string(ref.layer) + " head " + std::to_string(ref.head);
            EXPECT_EQ(got->rows, ref.rows) << where;
            EXPECT_NEAR(got->entropy, ref.entropy, 1e-4 * (1 + ref.entropy)) << where;
            EXPECT_NEAR(got->sink_mass, ref.sink_mass, 1e-5) << where;
            EXPECT_NEAR(got->mean_distance, ref.mean_distance, 1e-4 * (1 + ref.mean_distance)) << where;
            EXPECT_NEAR(got->max_prob, ref.max_prob, 1e-5) << where;
            ++checked;
        }
    }
    EXPECT_EQ(checked, r.attention_summary.size());
    EXPECT_GT(n_layer, 0);
}

// The full map's head h cut to [q0, q0 + nq) x [k0, k0 + nk) (counts 0: all) equals the
// single-head map.
void expect_head_map_matches(const AttentionMap& full, const AttentionMap& one, const AttentionHead& want) {
    const std::string where = "layer " + std::to_string(want.layer) + " head " + std::to_string(want.head);
    ASSERT_EQ(one.n_head, 1) << where;
    ASSERT_EQ(one.head, want.head) << where;
    std::vector<int> rows;
    for (int q = 0; q < full.n_query(); ++q) {
        const int qp = full.query_pos[size_t(q)];
        if (qp >= want.query_first && (want.query_count == 0 || qp < want.query_first + want.query_count))
            rows.push_back(q);
    }
    ASSERT_EQ(size_t(one.n_query()), rows.size()) << where;
    const int k0 = want.key_first;
    const int k1 = want.key_count > 0 ? std::min(full.n_key(), k0 + want.key_count) : full.n_key();
    ASSERT_EQ(one.n_key(), k1 - k0) << where;
    for (int i = 0; i < one.n_query(); ++i) {
        const int q = rows[size_t(i)];
        ASSERT_EQ(one.query_pos[size_t(i)], full.query_pos[size_t(q)]) << where;
        for (int k = k0; k < k1; ++k) {
            ASSERT_EQ(one.key_pos[size_t(k - k0)], k) << where;
            ASSERT_NEAR(one.at(0, i, k - k0), full.at(want.head, q, k), 1e-6) << where << " q " << q << " k " << k;
        }
        if (!full.sink.empty()) {
            ASSERT_NEAR(one.sink[size_t(i)], full.sink[size_t(want.head) * size_t(full.n_query()) + size_t(q)], 1e-6);
        }
    }
}

TEST_P(SummaryProbes, GpuSummariesEqualTheCpuReferenceOfTheFullMaps) {
    auto model = GetParam() == "gptoss" ? gptoss_model() : zoo_model(GetParam());
    const auto& spec = model->internals().spec();
    const int L = spec.n_layer;
    std::vector<int32_t> prompt;
    if (GetParam() == "gptoss") {
        for (int i = 0; i < 23; ++i) prompt.push_back(int32_t((i * 37 + 11) % spec.n_vocab));
    } else {
        const std::string text = std::string(kProbeText) + " " + kProbeText;  // past zoo-swa's window of 32
        prompt = prompt_of(*model, text);
    }
    SessionOptions so;
    so.kv_cache = KvCacheType::F32;
    so.n_batch = 7;
    for (int l = 0; l < L; ++l) so.probes.attention_layers.push_back(l);
    so.probes.attention_max_rows = int(prompt.size());
    so.probes.attention_summary = true;
    const int last_heads = spec.layers[size_t(L - 1)].attn.n_head;
    const std::vector<AttentionHead> heads = {
        {0, 0, 0, 0, 0, 0},
        {L - 1, last_heads - 1, 3, 9, 2, 20},  // a tile: positions 3..11 x keys 2..21
    };
    so.probes.attention_heads = heads;
    Session s(*model, so);
    for (const std::vector<int32_t>& toks : {prompt, std::vector<int32_t>{7}}) {
        s.eval(toks);
        const ProbeResults& r = s.probes();
        ASSERT_EQ(r.attention.size(), size_t(L) + heads.size());
        expect_summaries_match_maps(r, L);
        for (size_t j = 0; j < heads.size(); ++j) {
            const AttentionMap& full = r.attention[size_t(heads[j].layer)];
            expect_head_map_matches(full, r.attention[size_t(L) + j], heads[j]);
        }
        for (const AttentionSummary& a : r.attention_summary) EXPECT_EQ(a.rows, int(toks.size()));
    }
    // The summary alone: the same numbers without any map.
    ProbeConfig only;
    only.attention_summary = true;
    s.set_probes(only);
    s.reset();
    s.eval(prompt);
    ProbeResults with_maps;
    {
        Session t(*model, so);
        t.eval(prompt);
        with_maps = t.probes();
    }
    ASSERT_TRUE(s.probes().attention.empty());
    ASSERT_EQ(s.probes().attention_summary.size(), with_maps.attention_summary.size());
    for (size_t i = 0; i < with_maps.attention_summary.size(); ++i) {
        EXPECT_NEAR(s.probes().attention_summary[i].entropy, with_maps.attention_summary[i].entropy, 1e-5);
        EXPECT_NEAR(s.probes().attention_summary[i].mean_distance, with_maps.attention_summary[i].mean_distance, 1e-4);
    }
}

INSTANTIATE_TEST_SUITE_P(Models, SummaryProbes, ::testing::Values("zoo-swa", "zoo-mla", "gptoss"),
                         test::ModelParamName());

}  // namespace
}  // namespace vkllm
