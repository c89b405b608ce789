// The extended probes and the residual-stream edits, in three parts: every probe and the edits
// against the CPU reference forward of the same tokens fed in the same passes (zoo-dense with every
// probe at once and the timings' order, then the zoo's sliding-window, MoE and MLA families, whose
// logits are checked against the reference first); the attention probes (maps capped to the newest
// rows, maps across passes equal to one pass, routing adding up to the expert load, gpt-oss's sink
// probabilities, the GPU's per-head summaries and single-head tiles against the CPU's); and what a
// session keeps (counts without probes, the memory budget, clear errors, no hazard under
// synchronization validation). Prompts are longer than a small n_batch, so every eval runs in
// several passes. One program, so that the zoo models' pipelines are compiled once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <set>
#include <stdexcept>

#include "cpu/ref_attention_summary.h"
#include "gpu/device.h"
#include "gpu_test.h"
#include "probe_reference_checks.h"
#include "probe_test.h"
#include "reference/reference_forward.h"

namespace vkllm {
namespace {

using Probes = test::GpuTest;
using test::expect_ffn_down_matches;
using test::expect_last_lens_is_the_output;
using test::expect_maps_match;
using test::expect_residual_matches;
using test::expect_routing_matches;
using test::gptoss_model;
using test::kProbeText;
using test::prompt_of;
using test::rel_diff;
using test::zoo_model;

// ---------------------------------------------------------------------------------------------
// Every probe and the edits against the CPU reference forward.

TEST_F(Probes, DenseProbesOverSeveralPassesMatchTheCpuReference) {
    auto model = zoo_model("zoo-dense");
    const auto& spec = model->internals().spec();
    const int L = spec.n_layer, E = spec.n_embd;
    SessionOptions so;
    so.kv_cache = KvCacheType::F32;  // exact, as the reference forward keeps K/V
    so.n_batch = 7;
    so.llama_cpp_rounding = false;
    so.probes.attention_layers = {0, L - 1};
    so.probes.residual_stats = true;
    so.probes.residual_top_k = 5;
    so.probes.residual_full_layers = {-1, 1};
    so.probes.ffn_down = true;
    for (int l = 0; l < L; ++l) so.probes.logit_lens_layers.push_back(l);
    so.probes.logit_lens_top_n = 4;
    so.probes.timings = true;
    Session session(*model, so);
    model::ReferenceForward ref(model->internals().file(), spec, session.n_ctx(), /*round_activations=*/false);
    ref.record_attention_layers = so.probes.attention_layers;
    const auto prompt = prompt_of(*model, kProbeText);
    const int T = int(prompt.size());
    ASSERT_GT(T, 3 * so.n_batch);
    const auto got = session.eval(prompt, true);
    const auto want = ref.eval(prompt);
    EXPECT_LT(rel_diff(got, want), 1e-4);
    const ProbeResults& r = session.probes();
    EXPECT_EQ(r.passes, (T + so.n_batch - 1) / so.n_batch);

    // Every query row of every pass, keys in position order, future keys exactly 0.
    ASSERT_EQ(r.attention.size(), 2u);
    for (const AttentionMap& m : r.attention) {
        ASSERT_EQ(m.n_query(), T);
        ASSERT_EQ(m.n_key(), T);
        for (int q = 0; q < T; ++q) EXPECT_EQ(m.query_pos[size_t(q)], q);
    }
    expect_maps_match(r, ref, spec);

    // Residual statistics over all the eval's tokens, the largest entries in order, and the whole tensors.
    ASSERT_EQ(r.residual.size(), size_t(L + 1));
    expect_residual_matches(r, ref, E);
    for (const ResidualStat& s : r.residual) {
        const std::vector<float>& x = ref.residual[size_t(s.layer + 1)];
        ASSERT_EQ(s.top.size(), 5u);
        EXPECT_EQ(s.top[0].token, s.token);
        EXPECT_EQ(s.top[0].channel, s.channel);
        for (size_t i = 1; i < s.top.size(); ++i) EXPECT_GE(std::fabs(s.top[i - 1].value), std::fabs(s.top[i].value));
        // Nothing outside the top is larger than its smallest entry.
        size_t larger = 0;
        for (float v : x) larger += std::fabs(v) > std::fabs(s.top.back().value) * (1 + 1e-4) ? 1 : 0;
        EXPECT_LT(larger, s.top.size());
    }
    ASSERT_EQ(r.residual_full.size(), 2u);
    for (const ResidualTensor& t : r.residual_full) {
        EXPECT_EQ(t.n_embd, E);
        ASSERT_EQ(t.positions.size(), size_t(T));
        EXPECT_EQ(t.positions.back(), T - 1);
    }

    // ffn_down's input and output, one entry per layer.
    ASSERT_EQ(r.ffn_down.size(), size_t(L));
    for (const FfnDownStat& f : r.ffn_down) EXPECT_EQ(f.expert, -1);
    expect_ffn_down_matches(r, ref, spec);

    // The logit lens of every layer; the last one is the model's own output.
    ASSERT_EQ(r.logit_lens.size(), size_t(L));
    for (const LogitLens& l : r.logit_lens) {
        ASSERT_EQ(l.top.size(), 4u);
        EXPECT_EQ(l.top[0].text, model->internals().tokenizer().token_to_piece(l.top[0].id));
    }
    expect_last_lens_is_the_output(r, std::vector<float>(got.end() - spec.n_vocab, got.end()), L, T - 1);

    // Timings in recorded order: per pass, the embeddings (-1), layers 0..L-1 in order, the output (-1).
    if (model->internals().context().caps().timestamps) {
        ASSERT_FALSE(r.timings.empty());
        int passes = 0, prev = -1;
        bool in_output = false;
        for (const OpTiming& t : r.timings) {
            if (t.op == "get_rows") {
                ++passes;
                prev = -1;
                in_output = false;
            }
            if (t.layer == -1 && prev == L - 1) in_output = true;
            if (in_output) {
                EXPECT_EQ(t.layer, -1) << t.op;
            } else {
                EXPECT_TRUE(t.layer == prev || t.layer == prev + 1) << t.op << " at layer " << t.layer << " after " << prev;
            }
            prev = t.layer;
            EXPECT_GE(t.ms, 0.0);
        }
        EXPECT_EQ(passes, r.passes);
        int counted = 0;
        for (const OpTiming& t : r.timings) counted += t.count;
        EXPECT_EQ(counted, r.dispatches);
        const auto by_layer = timings_by_layer(r.timings, L);
        ASSERT_EQ(by_layer.size(), size_t(L + 1));
        double total = 0;
        for (const OpTiming& t : r.timings) total += t.ms;
        EXPECT_NEAR(std::accumulate(by_layer.begin(), by_layer.end(), 0.0), total, 1e-6 * total + 1e-9);
        const auto by_op = timings_by_op(r.timings);
        EXPECT_TRUE(std::any_of(by_op.begin(), by_op.end(), [](const OpTiming& o) { return o.op == "attention"; }));
    }

    EXPECT_GT(session.probe_bytes(), 0u);
    // A decode step: one row per map, appended to nothing (a new eval).
    const auto next = session.eval({prompt[3]});
    ref.eval({prompt[3]});
    ASSERT_EQ(session.probes().attention[0].n_query(), 1);
    EXPECT_EQ(session.probes().attention[0].n_key(), T + 1);
    EXPECT_EQ(session.probes().residual[0].token_max_abs.size(), 1u);
    EXPECT_EQ(session.probes().passes, 1);
    expect_last_lens_is_the_output(session.probes(), next, L, T);

    // Probes turned off record nothing and give their buffers back.
    session.set_probes({});
    session.eval({prompt[4]});
    EXPECT_TRUE(session.probes().attention.empty() && session.probes().residual.empty() &&
                session.probes().ffn_down.empty() && session.probes().logit_lens.empty() &&
                session.probes().timings.empty());
    EXPECT_EQ(session.probe_bytes(), 0u);
}

// Each edit mode, over a prompt of several passes and then decode steps, against the CPU
// reference with the same edits fed the same passes.
TEST_F(Probes, ResidualEditsMatchTheCpuReference) {
    auto model = zoo_model("zoo-dense");
    const auto& spec = model->internals().spec();
    auto prompt = prompt_of(*model, kProbeText);
    const int n_batch = 7;
    prompt.resize(17);  // passes of 7, 7 and 3 tokens
    using M = ResidualEdit::Mode;
    SessionOptions plain_options;
    plain_options.kv_cache = KvCacheType::F32;  // exact, as the reference forward keeps K/V
    plain_options.llama_cpp_rounding = false;
    Session plain(*model, plain_options);
    const auto unedited = plain.eval(prompt, true);
    for (M mode : {M::Zero, M::Value, M::Scale, M::Mean}) {
        const std::vector<ResidualEdit> edits = {{1, 5, mode, mode == M::Scale ? -3.0f : 4.0f},
                                                 {-1, 2, mode, mode == M::Scale ? 2.0f : -1.5f}};
        SessionOptions so;
        so.kv_cache = KvCacheType::F32;  // exact, as the reference forward keeps K/V
        so.n_batch = n_batch;
        so.llama_cpp_rounding = false;
        so.probes.residual_full_layers = {1};
        Session s(*model, so);
        s.set_residual_edits(edits);
        model::ReferenceForward ref(model->internals().file(), spec, s.n_ctx(), false);
        ref.set_residual_edits(edits);
        const auto got = s.eval(prompt, true);
        std::vector<float> want;
        std::vector<float> edited;  // the reference's layer-1 residual of every pass
        for (size_t done = 0; done < prompt.size(); done += n_batch) {
            const size_t n = std::min<size_t>(n_batch, prompt.size() - done);
            auto w = ref.eval(std::vector<int32_t>(prompt.begin() + long(done), prompt.begin() + long(done + n)));
            want.insert(want.end(), w.begin(), w.end());
            edited.insert(edited.end(), ref.residual[2].begin(), ref.residual[2].end());
        }
        EXPECT_LT(rel_diff(got, want), 1e-4) << "mode " << int(mode);
        const ResidualTensor& x = s.probes().residual_full[0];
        EXPECT_LT(rel_diff(x.values, edited), 1e-4);
        for (size_t t = 0; t < prompt.size(); ++t) {
            const float v = x.values[t * size_t(spec.n_embd) + 5];
            if (mode == M::Zero) { EXPECT_EQ(v, 0.0f); }
            if (mode == M::Value) { EXPECT_EQ(v, 4.0f); }
        }
        for (int32_t tok : {prompt[2], prompt[9], prompt[4]}) {
            const auto g = s.eval({tok});
            const auto w = ref.eval({tok});
            EXPECT_LT(rel_diff(g, w), 1e-4) << "mode " << int(mode);
        }
        // The edits change what the model computes.
        EXPECT_GT(test::max_abs_diff(unedited, got), 1e-3) << "mode " << int(mode);
    }
}

// The zoo's other families against the CPU reference forward (Gemma 3 sliding window, Mixtral
// MoE, DeepSeek-V2 MLA): first the logits, which prove the reference right, then every probe
// and the interventions. Exact f32 on both sides (no llama.cpp activation rounding).
class ZooReference : public Probes, public ::testing::WithParamInterface<std::string> {
protected:
    std::unique_ptr<Model> model_ = zoo_model(GetParam());
    const model::ModelSpec& spec_ = model_->internals().spec();
    model::ReferenceForward reference(int n_ctx) const {
        return model::ReferenceForward(model_->internals().file(), spec_, n_ctx, /*round_activations=*/false);
    }
    SessionOptions options(int n_batch) const {
        SessionOptions so;
        so.kv_cache = KvCacheType::F32;  // exact, as the reference forward keeps K/V
        so.n_batch = n_batch;
        so.llama_cpp_rounding = false;
        return so;
    }
    // Longer than zoo-swa's window of 32, so its local layers mask keys out.
    std::vector<int32_t> long_prompt() const {
        const std::string text = GetParam() == "zoo-swa" ? std::string(kProbeText) + " " + kProbeText : std::string(kProbeText);
        return prompt_of(*model_, text);
    }
};

// ~12 tokens in two passes (7 + 5) and a decode step: the GPU's logits equal the reference's.
TEST_P(ZooReference, LogitsInTwoPassesEqualTheGpuForward) {
    auto prompt = long_prompt();
    prompt.resize(12);
    Session s(*model_, options(256));
    auto ref = reference(s.n_ctx());
    double worst = 0;
    for (const auto& part : {std::vector<int32_t>(prompt.begin(), prompt.begin() + 7),
                             std::vector<int32_t>(prompt.begin() + 7, prompt.end()), std::vector<int32_t>{prompt[2]}}) {
        const auto got = s.eval(part, true);
        const auto want = ref.eval(part);
        ASSERT_EQ(got.size(), want.size());
        const double d = rel_diff(got, want);
        worst = std::max(worst, d);
        EXPECT_LT(d, 1e-4) << part.size() << " tokens at position " << ref.n_past() - int(part.size());
    }
    std::printf("%s: max |GPU - reference| / max |reference| over the logits = %.3g\n", GetParam().c_str(), worst);
}

// Every probe of a prompt run in passes of 7, then of a decode step, against the reference.
TEST_P(ZooReference, ProbesMatchTheCpuReference) {
    const int L = spec_.n_layer, E = spec_.n_embd;
    SessionOptions so = options(7);
    for (int l = 0; l < L; ++l) so.probes.attention_layers.push_back(l);
    so.probes.residual_stats = true;
    so.probes.residual_top_k = 3;
    so.probes.residual_full_layers = {-1, L - 1};
    so.probes.ffn_down = true;
    so.probes.routing = true;
    so.probes.logit_lens_layers = {0, L - 1};
    Session s(*model_, so);
    auto ref = reference(s.n_ctx());
    ref.record_attention_layers = so.probes.attention_layers;
    const auto prompt = long_prompt();
    const int T = int(prompt.size());
    const auto got = s.eval(prompt, true);
    const auto want = ref.eval(prompt);
    EXPECT_LT(rel_diff(got, want), 1e-4);
    const ProbeResults& r = s.probes();
    EXPECT_GT(r.passes, 1);
    ASSERT_EQ(r.attention.size(), size_t(L));
    expect_maps_match(r, ref, spec_);
    expect_residual_matches(r, ref, E);
    expect_ffn_down_matches(r, ref, spec_);
    expect_routing_matches(r, ref);
    const std::vector<float> last(want.end() - spec_.n_vocab, want.end());
    expect_last_lens_is_the_output(r, last, L, T - 1);

    // A decode step: one row per map over T + 1 keys.
    const auto next = s.eval({prompt[3]});
    EXPECT_LT(rel_diff(next, ref.eval({prompt[3]})), 1e-4);
    for (const AttentionMap& m : s.probes().attention) ASSERT_EQ(m.n_query(), 1);
    expect_maps_match(s.probes(), ref, spec_);
    expect_routing_matches(s.probes(), ref);
    expect_last_lens_is_the_output(s.probes(), next, L, T);
}

// Residual-stream edits over passes of 7 + 5 and decode steps, fed to the reference the same way.
TEST_P(ZooReference, ResidualEditsMatchTheCpuReference) {
    using M = ResidualEdit::Mode;
    const int L = spec_.n_layer;
    auto prompt = long_prompt();
    prompt.resize(12);
    const std::vector<ResidualEdit> edits = {{-1, 2, M::Scale, 2.0f}, {0, 5, M::Mean, 0.0f}, {L - 2, 7, M::Value, 3.0f}};
    SessionOptions so = options(7);
    so.probes.residual_full_layers = {0};
    Session s(*model_, so);
    s.set_residual_edits(edits);
    auto ref = reference(s.n_ctx());
    ref.set_residual_edits(edits);
    const auto got = s.eval(prompt, true);
    std::vector<float> want, edited;
    for (size_t done = 0; done < prompt.size(); done += 7) {
        const size_t n = std::min<size_t>(7, prompt.size() - done);
        const auto w = ref.eval(std::vector<int32_t>(prompt.begin() + long(done), prompt.begin() + long(done + n)));
        want.insert(want.end(), w.begin(), w.end());
        edited.insert(edited.end(), ref.residual[1].begin(), ref.residual[1].end());
    }
    EXPECT_LT(rel_diff(got, want), 1e-4);
    EXPECT_LT(rel_diff(s.probes().residual_full[0].values, edited), 1e-5);
    for (int32_t tok : {prompt[2], prompt[9]}) EXPECT_LT(rel_diff(s.eval({tok}), ref.eval({tok})), 1e-4);
    // The edits change what the model computes.
    Session plain(*model_, options(7));
    EXPECT_GT(test::max_abs_diff(plain.eval(prompt, true), got), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooReference, ::testing::Values("zoo-swa", "zoo-moe", "zoo-mla"),
                         test::ModelParamName());

// ---------------------------------------------------------------------------------------------
// The attention probes.

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

// ---------------------------------------------------------------------------------------------
// What a session keeps of its probes: counts, the budget, errors, hazards.

TEST_F(Probes, CountsAreKeptWithoutProbesAndEqualForIdenticalSteps) {
    auto model = zoo_model("zoo-dense");
    const auto prompt = prompt_of(*model, kProbeText);
    int dispatches = -1, barriers = -1;
    for (int run = 0; run < 2; ++run) {
        Session s(*model);  // every probe off
        s.eval(prompt);
        s.eval({prompt[5]});
        const ProbeResults& r = s.probes();
        EXPECT_TRUE(r.attention.empty() && r.residual.empty() && r.timings.empty() && r.logit_lens.empty());
        EXPECT_EQ(r.passes, 1);
        EXPECT_GT(r.dispatches, 0);
        EXPECT_GT(r.barriers, 0);
        if (run == 1) {
            EXPECT_EQ(r.dispatches, dispatches);
            EXPECT_EQ(r.barriers, barriers);
        }
        dispatches = r.dispatches;
        barriers = r.barriers;
    }
}

// Under synchronization validation every zoo model's prefill (in passes) and decode, with the
// probes and an edit on, records no hazard: each barrier the data needs is there.
TEST_F(Probes, ZooModelsAreCleanUnderSynchronizationValidation) {
    test::ScopedEnv sync("VK_LAYER_ENABLES", "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT");
    for (const char* name : {"zoo-dense", "zoo-swa", "zoo-moe", "zoo-mla"}) {
        const uint64_t before = gpu::validation_error_count();
        auto model = zoo_model(name);  // a new Vulkan instance: it reads VK_LAYER_ENABLES
        const int L = model->internals().spec().n_layer;
        SessionOptions so;
        so.kv_cache = KvCacheType::F32;  // exact, as the reference forward keeps K/V
        so.n_batch = 7;
        so.probes.attention_layers = {0, L - 1};
        so.probes.residual_stats = true;
        so.probes.ffn_down = true;
        so.probes.routing = true;
        so.probes.expert_load = true;
        so.probes.logit_lens_layers = {0};
        Session s(*model, so);
        s.set_residual_edits({{0, 1, ResidualEdit::Mode::Mean, 0}});
        auto prompt = prompt_of(*model, kProbeText);
        prompt.resize(10);
        s.eval(prompt);
        s.eval({prompt[1]});
        EXPECT_EQ(gpu::validation_error_count(), before) << name;
    }
}

TEST_F(Probes, BadLayersAreClearErrors) {
    auto model = zoo_model("zoo-dense");
    Session s(*model);
    EXPECT_THROW(s.set_residual_edits({{model->internals().spec().n_layer, 0, ResidualEdit::Mode::Zero, 0}}),
                 std::invalid_argument);
    EXPECT_THROW(s.set_residual_edits({{0, model->internals().spec().n_embd, ResidualEdit::Mode::Zero, 0}}),
                 std::invalid_argument);
    ProbeConfig p;
    p.attention_layers = {99};
    s.set_probes(p);
    EXPECT_THROW(s.eval({1, 2}), std::invalid_argument);
}

TEST_F(Probes, BudgetAndBadHeadsAreClearErrors) {
    auto model = zoo_model("zoo-dense");
    const auto& spec = model->internals().spec();
    Session s(*model);
    ProbeConfig p;
    for (int l = 0; l < spec.n_layer; ++l) p.attention_layers.push_back(l);
    p.max_bytes = 1024;
    s.set_probes(p);
    try {
        s.eval({1, 2});
        ADD_FAILURE() << "no error over the budget";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("budget"), std::string::npos) << e.what();
    }
    ProbeConfig h;
    h.attention_heads = {{0, spec.layers[0].attn.n_head}};
    s.set_probes(h);
    EXPECT_THROW(s.eval({1, 2}), std::invalid_argument);
    h.attention_heads = {{spec.n_layer, 0}};
    s.set_probes(h);
    EXPECT_THROW(s.eval({1, 2}), std::invalid_argument);
    h.attention_heads = {{0, 0, -1, 0, 0, 0}};
    s.set_probes(h);
    EXPECT_THROW(s.eval({1, 2}), std::invalid_argument);
}

// The ffn_down probe is counted in the budget (a request over it names ffn_down) and keeps a
// summary per layer, not every token's rows: six times the tokens cost (almost) no more memory.
TEST_F(Probes, FfnDownIsCountedInTheBudgetAndKeepsNoRows) {
    auto model = zoo_model("zoo-dense");
    const auto& spec = model->internals().spec();
    const int L = spec.n_layer, E = spec.n_embd, n_ff = spec.layers[0].ffn.n_ff;
    SessionOptions so;
    so.n_ctx = 1024;
    so.n_batch = 64;
    so.probes.ffn_down = true;
    std::vector<int32_t> ids(600);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(1 + (i * 7) % 50);
    Session short_eval(*model, so), long_eval(*model, so);
    short_eval.eval(std::vector<int32_t>(ids.begin(), ids.begin() + 100));
    long_eval.eval(ids);
    ASSERT_EQ(long_eval.probes().ffn_down.size(), size_t(L));
    for (const FfnDownStat& f : long_eval.probes().ffn_down) {
        EXPECT_GT(f.in_max_abs, f.in_median_abs);
        EXPECT_GT(f.in_median_abs, 0.0f);
        EXPECT_GT(f.out_max_abs, f.out_median_abs);
        EXPECT_GE(f.in_token, 0);
        EXPECT_LT(f.in_token, int(ids.size()));
    }
    // Keeping the rows would add 500 tokens' input and output rows of every layer.
    const uint64_t rows = uint64_t(500) * uint64_t(n_ff + E) * sizeof(float) * uint64_t(L);
    EXPECT_LT(long_eval.probe_bytes(), short_eval.probe_bytes() + rows / 8)
        << short_eval.probe_bytes() << " -> " << long_eval.probe_bytes();

    ProbeConfig p;
    p.ffn_down = true;
    p.max_bytes = uint64_t(64) << 10;
    Session s(*model);
    s.set_probes(p);
    try {
        s.eval({1, 2});
        ADD_FAILURE() << "ffn_down is not counted in the budget";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("ffn_down"), std::string::npos) << e.what();
    }
    p.max_bytes = ProbeConfig().max_bytes;  // the default budget holds it
    s.set_probes(p);
    EXPECT_NO_THROW(s.eval({1, 2}));
}

}  // namespace
}  // namespace vkllm
