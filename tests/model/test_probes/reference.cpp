// Every probe and the residual-stream edits against the CPU reference forward of the same tokens
// fed in the same passes: zoo-dense with every probe at once (and the timings' order), then the
// zoo's sliding-window, MoE and MLA families, whose logits are checked against the reference
// first. Part of model_test_probes (tests/model/test_probes.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

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
using test::kProbeText;
using test::prompt_of;
using test::rel_diff;
using test::zoo_model;

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

}  // namespace
}  // namespace vkllm
