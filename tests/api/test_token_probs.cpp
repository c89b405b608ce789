// vkllm/token_probs.h: the log softmax and the most likely tokens a front-end computes from
// logits it read itself equal what generate() reports.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "vkllm/token_probs.h"

namespace vkllm {
namespace {

TEST(TokenProbs, LogSoftmaxAndTheMostLikely) {
    const std::vector<float> logits{2.0f, 0.5f, 2.0f, -1.0f, 1.0f};
    const std::vector<double> lp = log_softmax(logits.data(), int(logits.size()));
    double sum = 0;
    for (double x : lp) sum += std::exp(x);
    EXPECT_NEAR(sum, 1.0, 1e-15);
    EXPECT_NEAR(lp[0] - lp[4], 1.0, 1e-12);
    EXPECT_EQ(most_likely(lp, 3), (std::vector<int32_t>{0, 2, 4}));  // ties: the lower id first
    EXPECT_EQ(most_likely(lp, 10).size(), logits.size());
    EXPECT_TRUE(most_likely(lp, -1).empty());
}

TEST(TokenProbs, NanCountsAsMinusInfinityAndNothingValidIsAnError) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> logits{nan, 0.0f};
    const std::vector<double> lp = log_softmax(logits.data(), 2);
    EXPECT_EQ(lp[1], 0.0);
    EXPECT_TRUE(std::isinf(lp[0]) && lp[0] < 0);
    const std::vector<float> none{nan, -std::numeric_limits<float>::infinity()};
    EXPECT_THROW(log_softmax(none.data(), 2), std::runtime_error);
    EXPECT_THROW(log_softmax(logits.data(), 0), std::runtime_error);
}

}  // namespace
}  // namespace vkllm
