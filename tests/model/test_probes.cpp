// The extended probes and the residual-stream edits, one program in three files, so that the zoo
// models' pipelines are compiled once: test_probes/reference.cpp (every probe and the edits against
// the CPU reference forward), test_probes/attention.cpp (maps, routing, sinks, summaries and
// single-head tiles), and here what a session keeps of its probes: the dispatch and barrier
// counts without any probe, the probes' memory budget (ffn_down counted in it, summaries rather
// than rows), clear errors for bad layers and heads, and no hazard under synchronization
// validation with probes and an edit on. Prompts are longer than a small n_batch, so every eval
// runs in several passes.
#include <gtest/gtest.h>

#include <stdexcept>

#include "gpu/device.h"
#include "gpu_test.h"
#include "probe_test.h"

namespace vkllm {
namespace {

using Probes = test::GpuTest;
using test::kProbeText;
using test::prompt_of;
using test::zoo_model;

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
