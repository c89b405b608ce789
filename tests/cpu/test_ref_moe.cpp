// Reference MoE router: softmax / sigmoid gating, top-k with ties, selection bias,
// group-limited routing (DeepSeek V3), softmax after top-k (Mixtral, gpt-oss), scaling.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "cpu/ref_ops.h"
#include "test_support.h"

using namespace vkllm;
using cpu::RouterParams;

namespace {

struct Routed { std::vector<int32_t> experts; std::vector<float> weights; };
Routed route(const std::vector<float>& logits, const RouterParams& p) {
    const int64_t n_tokens = logits.size() / p.n_expert;
    Routed r{std::vector<int32_t>(n_tokens * p.top_k), std::vector<float>(n_tokens * p.top_k)};
    cpu::route(logits.data(), n_tokens, p, r.experts.data(), r.weights.data());
    return r;
}

RouterParams router(int n_expert, int top_k, RouterParams::Gating g = RouterParams::Softmax) {
    RouterParams p;
    p.n_expert = n_expert;
    p.top_k = top_k;
    p.gating = g;
    return p;
}

}  // namespace

TEST(Route, SoftmaxTopTwoHandComputed) {
    const std::vector<float> logits = {1, 3, 2, 0};
    const double z = std::exp(1.0) + std::exp(3.0) + std::exp(2.0) + 1.0;
    auto r = route(logits, router(4, 2));
    EXPECT_EQ(r.experts, (std::vector<int32_t>{1, 2}));
    EXPECT_NEAR(r.weights[0], std::exp(3.0) / z, 1e-6);
    EXPECT_NEAR(r.weights[1], std::exp(2.0) / z, 1e-6);

    RouterParams norm = router(4, 2);
    norm.norm_topk = true;
    r = route(logits, norm);
    EXPECT_NEAR(r.weights[0], std::exp(3.0) / (std::exp(3.0) + std::exp(2.0)), 1e-6);  // 0.7311
    EXPECT_NEAR(r.weights[0] + r.weights[1], 1.0, 1e-6);
}

TEST(Route, TiesBreakTowardTheLowerExpert) {
    auto r = route({1, 1, 1, 1}, router(4, 2));
    EXPECT_EQ(r.experts, (std::vector<int32_t>{0, 1}));
    r = route({0, 2, 2, 1, 2}, router(5, 2));
    EXPECT_EQ(r.experts, (std::vector<int32_t>{1, 2}));
    r = route({5, -1, 7, 7}, router(4, 3, RouterParams::Sigmoid));
    EXPECT_EQ(r.experts, (std::vector<int32_t>{2, 3, 0}));
}

TEST(Route, TopOneIsArgmaxAndAllExpertsIsASort) {
    const auto logits = test::random_floats(6 * 16, 31, -4.0f, 4.0f);  // [6 tokens, 16 experts]
    auto r = route(logits, router(16, 1));
    for (int t = 0; t < 6; ++t) EXPECT_EQ(r.experts[t], cpu::argmax(&logits[t * 16], 16));

    r = route(logits, router(16, 16));
    for (int t = 0; t < 6; ++t) {
        std::vector<int32_t> seen(r.experts.begin() + t * 16, r.experts.begin() + (t + 1) * 16);
        double sum = 0;
        for (int i = 0; i < 16; ++i) {
            sum += r.weights[t * 16 + i];
            if (i > 0) {
                EXPECT_GE(r.weights[t * 16 + i - 1], r.weights[t * 16 + i]);
            }
        }
        EXPECT_NEAR(sum, 1.0, 1e-5);  // softmax over every expert
        std::sort(seen.begin(), seen.end());
        for (int i = 0; i < 16; ++i) EXPECT_EQ(seen[i], i);
    }
}

TEST(Route, SelectionBiasChoosesButDoesNotWeigh) {
    // Sigmoid gating (DeepSeek V3): the bias moves expert 3 into the top 2, its weight stays sigmoid(logit).
    const std::vector<float> logits = {2, 1, 0, -1};
    const float bias[] = {0, 0, 0, 5};
    RouterParams p = router(4, 2, RouterParams::Sigmoid);
    p.selection_bias = bias;
    const auto r = route(logits, p);
    EXPECT_EQ(r.experts, (std::vector<int32_t>{3, 0}));
    EXPECT_NEAR(r.weights[0], 1 / (1 + std::exp(1.0)), 1e-6);
    EXPECT_NEAR(r.weights[1], 1 / (1 + std::exp(-2.0)), 1e-6);
    p.selection_bias = nullptr;
    EXPECT_EQ(route(logits, p).experts, (std::vector<int32_t>{0, 1}));
}

TEST(Route, GroupLimitedRoutingKeepsTheBestGroupsByTopTwoSum) {
    // 8 experts in 4 groups of 2; sigmoid(0) = 0.5 everywhere, so the bias alone sets the scores:
    //   group 0: 1.4, 0.5 -> 1.9   group 1: 1.0, 1.0 -> 2.0   group 2: 0.8, 0.8 -> 1.6   group 3: 1.0
    const std::vector<float> logits(8, 0.0f);
    const float bias[] = {0.9f, 0, 0.5f, 0.5f, 0.3f, 0.3f, 0, 0};
    RouterParams p = router(8, 2, RouterParams::Sigmoid);
    p.selection_bias = bias;
    p.n_group = 4;
    p.topk_group = 1;  // only group 1 survives, though expert 0 has the best single score
    auto r = route(logits, p);
    EXPECT_EQ(r.experts, (std::vector<int32_t>{2, 3}));
    p.topk_group = 2;  // groups 1 and 0: expert 0, then the tie 2 / 3 goes to 2
    r = route(logits, p);
    EXPECT_EQ(r.experts, (std::vector<int32_t>{0, 2}));
    EXPECT_NEAR(r.weights[0], 0.5f, 1e-7);  // unbiased sigmoid
    p.norm_topk = true;
    p.weights_scale = 2.5f;
    r = route(logits, p);
    EXPECT_NEAR(r.weights[0], 1.25f, 1e-6);
    EXPECT_NEAR(r.weights[1], 1.25f, 1e-6);
    // Without groups the best two experts overall win.
    p.n_group = 1;
    EXPECT_EQ(route(logits, p).experts, (std::vector<int32_t>{0, 2}));
    p.topk_group = 1;
    p.n_group = 4;
    p.top_k = 3;  // more than the kept groups hold
    EXPECT_THROW(route(logits, p), cpu::ShapeError);
}

TEST(Route, SoftmaxAfterTopK) {
    RouterParams p = router(4, 2);
    p.softmax_after_topk = true;
    const auto r = route({1, 3, 2, 0}, p);
    EXPECT_EQ(r.experts, (std::vector<int32_t>{1, 2}));
    EXPECT_NEAR(r.weights[0], std::exp(1.0) / (1 + std::exp(1.0)), 1e-6);  // softmax(3, 2)
    // Mixtral identity: softmax over all, top-k, renormalise == softmax over the chosen logits.
    const auto logits = test::random_floats(5 * 8, 32, -3.0f, 3.0f);
    p = router(8, 2);
    p.softmax_after_topk = true;
    RouterParams q = router(8, 2);
    q.norm_topk = true;
    const auto a = route(logits, p), b = route(logits, q);
    EXPECT_EQ(a.experts, b.experts);
    EXPECT_LT(test::max_abs_diff(a.weights, b.weights), 1e-6);
}

TEST(Route, RejectsBadParameters) {
    EXPECT_THROW(route({1, 2}, router(2, 3)), cpu::ShapeError);
    EXPECT_THROW(route({1, 2}, router(2, 0)), cpu::ShapeError);
    RouterParams p = router(6, 2);
    p.n_group = 4;
    EXPECT_THROW(route(std::vector<float>(6), p), cpu::ShapeError);
}
