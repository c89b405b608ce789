// Mamba-2 (state-space layers) through the session: every golden model of tests/golden/ssm
// against llama.cpp (logits of every prompt position at two batch sizes, the smaller carrying the
// recurrent state over 30 passes, and 32 greedy tokens), decode one token at a time (replayed
// recordings) and truncation (re-evaluation from position 0, as the recurrent state cannot forget
// positions) against llama.cpp's golden logits (tests/golden/ssm), replayed against recorded
// decode steps, and the state's size: fixed per sequence, whatever the context, with no KV cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "gpu/device.h"
#include "greedy.h"
#include "model/forward.h"
#include "model/model_internal.h"
#include "param_names.h"
#include "ssm_golden.h"
#include "test_support.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

using Golden = test::SsmGolden;
using test::max_diff;
using test::quantised;

Golden load(const std::string& name) { return test::load_ssm_golden(name); }

// Where matmuls read activations rounded to 8 bits, the bound for a value that crossed a rounding
// boundary: the SSM kernels sum in their own order (ssm_scan: thread 0 over the states in order
// with one fma each; ssm_norm: a compensated sum, as ggml's double one), not in the order of the
// ggml build that made the golden (which depends on the host's SIMD width), so a value an ulp from
// a boundary can round the other way. mamba2-q8_0: one crossing moves positions 68-88 by up to
// 0.027 (the same natively and under the mobile clamp); the greedy text is unchanged.
constexpr double kRoundingCrossingBound = 0.05;

class Mamba2Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Mamba2Golden, LogitsAndGreedyTextMatchLlamaCpp) {
    const uint64_t errors_before = gpu::validation_error_count();
    Golden g = load(GetParam());
    const double bound = quantised(*g.model) ? kRoundingCrossingBound : 1e-3;
    for (int n_batch : {256, 4}) {
        SCOPED_TRACE("batch " + std::to_string(n_batch));
        SessionOptions so;
        so.n_batch = n_batch;
        Session s(*g.model, so);
        std::vector<float> logits = s.eval(g.tokens, /*all_logits=*/true);
        ASSERT_EQ(logits.size(), g.logits.size());
        EXPECT_LE(max_diff(g, logits, 0, g.tokens.size()), bound);
        const std::string base = test::source_dir() + "/tests/golden/ssm/" + GetParam();
        std::vector<int32_t> expected = test::read_ids(base + ".greedy.txt");
        ASSERT_EQ(expected.size(), 32u);
        EXPECT_EQ(test::greedy_continuation(s, std::vector<float>(logits.end() - g.n_vocab, logits.end()),
                                            expected.size()),
                  expected);
    }
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

INSTANTIATE_TEST_SUITE_P(Golden, Mamba2Golden, ::testing::Values("mamba2", "mamba2-q8_0"),
                         test::ModelParamName());

TEST(Mamba2, DecodeOneTokenAtATimeMatchesLlamaCpp) {
    const uint64_t errors_before = gpu::validation_error_count();
    Golden g = load("mamba2");
    SessionOptions so;
    so.n_batch = 8;
    Session s(*g.model, so);
    // A prompt of 9 (two passes), then one token per eval: 109 decode steps over two replay buckets.
    std::vector<float> first = s.eval(std::vector<int32_t>(g.tokens.begin(), g.tokens.begin() + 9), true);
    double worst = max_diff(g, first, 0, 9);
    for (size_t p = 9; p < g.tokens.size(); ++p) worst = std::max(worst, max_diff(g, s.eval({g.tokens[p]}), p, 1));
    EXPECT_LT(worst, 1e-3);
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

TEST(Mamba2, TruncateReevaluatesAndContinuesAsAFreshSession) {
    const uint64_t errors_before = gpu::validation_error_count();
    Golden g = load("mamba2");
    SessionOptions so;
    so.n_batch = 16;
    Session s(*g.model, so);
    const size_t n = g.tokens.size();
    s.eval(g.tokens, false);
    // Back to 50 tokens, then the rest again: the kept tokens are evaluated anew from position 0.
    s.truncate(50);
    EXPECT_EQ(s.n_past(), 50);
    std::vector<float> rest = s.eval(std::vector<int32_t>(g.tokens.begin() + 50, g.tokens.end()), true);
    EXPECT_LT(max_diff(g, rest, 50, n - 50), 1e-3);
    // A different continuation after truncating, then back again: still the golden logits.
    s.truncate(80);
    s.eval({g.tokens[5], g.tokens[6], g.tokens[7]}, false);
    s.truncate(80);
    rest = s.eval(std::vector<int32_t>(g.tokens.begin() + 80, g.tokens.end()), true);
    EXPECT_LT(max_diff(g, rest, 80, n - 80), 1e-3);
    // Truncating to every token evaluated forgets nothing and re-evaluates nothing.
    s.truncate(s.n_past());
    s.reset();
    rest = s.eval(g.tokens, true);
    EXPECT_LT(max_diff(g, rest, 0, n), 1e-3);
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

TEST(Mamba2, ReplayedDecodeStepsEqualRecordedSteps) {
    Golden g = load("mamba2-q8_0");
    const auto& in = g.model->internals();
    model::Forward replayed(in.context(), in.spec(), in.weights(), /*n_ctx=*/256, /*n_batch=*/8);
    model::Forward recorded(in.context(), in.spec(), in.weights(), /*n_ctx=*/256, /*n_batch=*/8);
    recorded.set_replay(false);
    std::vector<float> a(size_t(g.n_vocab)), b(size_t(g.n_vocab));
    const ProbeConfig off;
    replayed.step(g.tokens.data(), 5, 0, false, a.data(), off, nullptr);
    recorded.step(g.tokens.data(), 5, 0, false, b.data(), off, nullptr);
    for (int pos = 5; pos < 75; ++pos) {
        replayed.step(&g.tokens[size_t(pos)], 1, pos, false, a.data(), off, nullptr);
        recorded.step(&g.tokens[size_t(pos)], 1, pos, false, b.data(), off, nullptr);
        ASSERT_EQ(a, b) << "position " << pos;
    }
    EXPECT_EQ(replayed.replayed_steps(), 70u - 2u);  // recordings for keys in view 64 and 128
    // The state cannot forget: truncating within it asks for a re-evaluation, and a pass that
    // does not follow the state's last position is refused.
    EXPECT_TRUE(replayed.truncate(75));
    EXPECT_FALSE(replayed.truncate(40));
    EXPECT_THROW(replayed.step(&g.tokens[40], 1, 40, false, a.data(), off, nullptr), std::logic_error);
    replayed.step(g.tokens.data(), 8, 0, false, a.data(), off, nullptr);  // from position 0 again
    recorded.step(g.tokens.data(), 8, 0, false, b.data(), off, nullptr);
    EXPECT_EQ(a, b);
}

TEST(Mamba2, StateSizeIsFixedPerSequenceWithNoKvCache) {
    Golden g = load("mamba2");
    const auto& in = g.model->internals();
    const model::ModelSpec& spec = in.spec();
    // 3 layers: conv [128 + 2*2*16 channels][3 taps kept] and SSM [8 heads][16][16 states], f32.
    const uint64_t per_layer = (uint64_t(192) * 3 + uint64_t(128) * 16) * 4;
    EXPECT_EQ(spec.recurrent_state_bytes(), 3 * per_layer);
    EXPECT_EQ(spec.kv_bytes_per_token(), 0u);
    for (int n_ctx : {256, 4096}) {
        model::Forward f(in.context(), spec, in.weights(), n_ctx, /*n_batch=*/8);
        EXPECT_EQ(f.recurrent_bytes(), 3 * per_layer) << n_ctx;
        EXPECT_EQ(f.kv_bytes(), 0u) << n_ctx;
    }
    Session s(*g.model);
    EXPECT_EQ(s.kv_cache_usage().global_layers + s.kv_cache_usage().local_layers, 0);
}

}  // namespace
}  // namespace vkllm
