// Mamba-1 (llama.cpp's `mamba`) through the session: the golden models of tests/golden/ssm
// against llama.cpp (logits of every prompt position at two batch sizes, the smaller carrying the
// recurrent state over 30 passes, and 32 greedy tokens), one-token decode over two replay
// buckets, and the state's size: [d_inner][d_conv - 1] + [d_inner][d_state] floats per layer,
// whatever the context, with no KV cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "greedy.h"
#include "model/forward.h"
#include "param_names.h"
#include "ssm_golden.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

using test::load_ssm_golden;
using test::max_diff;

// Where matmuls read activations rounded to 8 bits, a value an ulp from a rounding boundary can
// round the other way: the scan sums in its own order, not the order of the ggml build that made
// the golden (test_ssm_mamba2.cpp). mamba-q8_0 moves by up to 0.028 (position 29).
constexpr double kRoundingCrossingBound = 0.05;

class Mamba1Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Mamba1Golden, LogitsAndGreedyTextMatchLlamaCpp) {
    const uint64_t errors_before = gpu::validation_error_count();
    test::SsmGolden g = load_ssm_golden(GetParam());
    const double bound = test::quantised(*g.model) ? kRoundingCrossingBound : 1e-3;
    for (int n_batch : {256, 4}) {
        SCOPED_TRACE("batch " + std::to_string(n_batch));
        SessionOptions so;
        so.n_batch = n_batch;
        Session s(*g.model, so);
        std::vector<float> logits = s.eval(g.tokens, /*all_logits=*/true);
        ASSERT_EQ(logits.size(), g.logits.size());
        EXPECT_LE(max_diff(g, logits, 0, g.tokens.size()), bound);
        ASSERT_EQ(g.greedy.size(), 32u);
        EXPECT_EQ(test::greedy_continuation(s, std::vector<float>(logits.end() - g.n_vocab, logits.end()),
                                            g.greedy.size()),
                  g.greedy);
    }
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

// mamba-dt-b-c-rms: Falcon-Mamba's unweighted RMS norms of dt, B and C (ssm.dt_b_c_rms).
INSTANTIATE_TEST_SUITE_P(Golden, Mamba1Golden, ::testing::Values("mamba", "mamba-q8_0", "mamba-dt-b-c-rms"),
                         test::ModelParamName());

TEST(Mamba1, DecodeOneTokenAtATimeAndTruncateMatchLlamaCpp) {
    const uint64_t errors_before = gpu::validation_error_count();
    test::SsmGolden g = load_ssm_golden("mamba");
    SessionOptions so;
    so.n_batch = 8;
    Session s(*g.model, so);
    // A prompt of 9 (two passes), then one token per eval: 109 decode steps over two replay buckets.
    std::vector<float> first = s.eval(std::vector<int32_t>(g.tokens.begin(), g.tokens.begin() + 9), true);
    double worst = max_diff(g, first, 0, 9);
    for (size_t p = 9; p < g.tokens.size(); ++p) worst = std::max(worst, max_diff(g, s.eval({g.tokens[p]}), p, 1));
    EXPECT_LT(worst, 1e-3);
    // The state cannot forget: back to 60 tokens re-evaluates them from position 0.
    const size_t n = g.tokens.size();
    s.truncate(60);
    std::vector<float> rest = s.eval(std::vector<int32_t>(g.tokens.begin() + 60, g.tokens.end()), true);
    EXPECT_LT(max_diff(g, rest, 60, n - 60), 1e-3);
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

TEST(Mamba1, StateSizeIsFixedPerSequenceWithNoKvCache) {
    test::SsmGolden g = load_ssm_golden("mamba");
    const auto& in = g.model->internals();
    const model::ModelSpec& spec = in.spec();
    for (const model::LayerSpec& L : spec.layers) {
        EXPECT_EQ(L.mixer, model::LayerMixer::Mamba1);
        EXPECT_FALSE(L.has_ffn);
        EXPECT_EQ(L.ssm.dt_rank, 4);  // ceil(64 / 16)
    }
    // 3 layers: conv [128 channels][3 taps kept] and SSM [128 channels][16 states], f32.
    const uint64_t per_layer = (uint64_t(128) * 3 + uint64_t(128) * 16) * 4;
    EXPECT_EQ(spec.recurrent_state_bytes(), 3 * per_layer);
    EXPECT_EQ(spec.kv_bytes_per_token(), 0u);
    for (int n_ctx : {256, 4096}) {
        model::Forward f(in.context(), spec, in.weights(), n_ctx, /*n_batch=*/8);
        EXPECT_EQ(f.recurrent_bytes(), 3 * per_layer) << n_ctx;
        EXPECT_EQ(f.kv_bytes(), 0u) << n_ctx;
    }
}

}  // namespace
}  // namespace vkllm
