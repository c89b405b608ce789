// SamplerParams::logit_bias: added to the logits before the penalties and filters in every
// sampling mode (greedy, sampling, constrained), -100 bans a token, and bad biases or ids are
// refused with the parameter named.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "sampling/sampler.h"

using namespace vkllm::sampling;

namespace {

SamplerParams params(float temperature, std::map<int32_t, float> bias, uint64_t seed = 1) {
    SamplerParams p;
    p.temperature = temperature;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = seed;
    p.logit_bias = std::move(bias);
    return p;
}

const std::vector<float> kLogits = {1.0f, 3.0f, 2.0f, 0.5f, 2.9f};

}  // namespace

TEST(LogitBias, GreedyTakesTheBiasedArgmax) {
    Sampler none(params(0.0f, {}));
    EXPECT_EQ(none.sample(kLogits.data(), 5), 1);
    Sampler up(params(0.0f, {{3, 2.6f}}));  // 0.5 + 2.6 = 3.1 > 3.0
    EXPECT_EQ(up.sample(kLogits.data(), 5), 3);
    Sampler down(params(0.0f, {{1, -0.2f}}));  // 2.8 < 2.9
    EXPECT_EQ(down.sample(kLogits.data(), 5), 4);
}

TEST(LogitBias, MinusHundredBansInEveryMode) {
    // Token 1 is far ahead of the rest; banned, it is never drawn, however hot the sampling.
    const std::vector<float> logits = {0.0f, 200.0f, 0.0f, 0.0f};
    for (float temperature : {0.0f, 0.7f, 2.0f}) {
        Sampler s(params(temperature, {{1, -100.0f}}, 11));
        for (int i = 0; i < 200; ++i) ASSERT_NE(s.sample(logits.data(), 4), 1) << "temperature " << temperature;
    }
    // Under a constraint too (the allowed set holds the banned token).
    Sampler c(params(0.0f, {{1, -100.0f}}));
    EXPECT_EQ(c.sample(logits.data(), 4, [](int32_t t) { return t == 1 || t == 2; }), 2);
    // Every token banned: nothing can be sampled.
    Sampler all(params(0.0f, {{0, -100.0f}, {1, -100.0f}}));
    const std::vector<float> two = {1.0f, 2.0f};
    EXPECT_THROW(all.sample(two.data(), 2), SamplingError);
}

TEST(LogitBias, ShiftsTheSampledDistribution) {
    // Two equal logits; a bias of ln(3) on token 1 makes it three times as likely (temperature 1).
    const std::vector<float> logits = {0.0f, 0.0f};
    Sampler s(params(1.0f, {{1, float(std::log(3.0))}}, 5));
    int ones = 0;
    const int n = 20000;
    for (int i = 0; i < n; ++i) ones += s.sample(logits.data(), 2) == 1;
    EXPECT_NEAR(double(ones) / n, 0.75, 0.02);
}

TEST(LogitBias, AppliedBeforeThePenalties) {
    // llama.cpp's order: the bias, then the repetition penalty divides a positive logit.
    // Token 0: (1 + 1) / 2 = 1 after the penalty; token 1 (2, not seen) stays 2.
    SamplerParams p = params(0.0f, {{0, 1.0f}});
    p.repeat_penalty = 2.0f;
    const std::vector<float> logits = {1.0f, 1.5f};
    Sampler s(p);
    s.accept(0);
    EXPECT_EQ(s.sample(logits.data(), 2), 1);  // bias after the penalty would give 0.5 + 1 = 1.5 vs 1.5: token 0
}

TEST(LogitBias, RefusesBadValuesAndIds) {
    auto message = [](const SamplerParams& p, int32_t n_vocab) {
        try {
            vkllm::validate(p, n_vocab);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(message(params(0.0f, {{0, -100.0f}, {4, 100.0f}}), 5), "");
    EXPECT_NE(message(params(0.0f, {{0, 100.5f}}), 5).find("logit_bias[0]"), std::string::npos);
    EXPECT_NE(message(params(0.0f, {{2, NAN}}), 5).find("logit_bias[2]"), std::string::npos);
    EXPECT_NE(message(params(0.0f, {{-1, 1.0f}}), 5).find("logit_bias"), std::string::npos);
    EXPECT_NE(message(params(0.0f, {{5, 1.0f}}), 5).find("outside the vocabulary of 5"), std::string::npos);
    EXPECT_THROW(Sampler(params(0.0f, {{0, -101.0f}})), std::invalid_argument);
    // An id past the logits given to sample() is an error, not a write out of bounds.
    Sampler s(params(0.0f, {{7, 1.0f}}));
    EXPECT_THROW(s.sample(kLogits.data(), 5), SamplingError);
}
