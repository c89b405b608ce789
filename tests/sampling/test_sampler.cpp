// Sampler: greedy, top-k / top-p / min-p filtering (checked by drawing many samples with a
// fixed seed), temperature, penalties, determinism and the portable PRNG.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "sampling/sampler.h"

using namespace vkllm::sampling;

namespace {

SamplerParams no_filters(float temperature, uint64_t seed = 1) {
    SamplerParams p;
    p.temperature = temperature;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = seed;
    return p;
}

std::vector<float> log_probs(const std::vector<double>& probs) {
    std::vector<float> l;
    for (double p : probs) l.push_back(float(std::log(p)));
    return l;
}

// Fraction of `n` draws that gave each token.
std::map<int32_t, double> frequencies(Sampler& s, const std::vector<float>& logits, int n) {
    std::map<int32_t, double> f;
    for (int i = 0; i < n; ++i) f[s.sample(logits.data(), int32_t(logits.size()))] += 1.0 / n;
    return f;
}

std::vector<float> pseudo_random_logits(int n, uint64_t seed) {
    Rng r(seed);
    std::vector<float> v(n);
    for (float& x : v) x = float(r.uniform() * 10.0 - 5.0);
    return v;
}

}  // namespace

TEST(Rng, MatchesReferenceXoshiro256StarStar) {
    // From a direct transcription of Vigna's splitmix64 + xoshiro256** (Python, big ints).
    Rng a(0);
    EXPECT_EQ(a.next(), 0x99ec5f36cb75f2b4ull);
    EXPECT_EQ(a.next(), 0xbf6e1f784956452aull);
    EXPECT_EQ(a.next(), 0x1a5f849d4933e6e0ull);
    Rng b(42);
    EXPECT_EQ(b.next(), 0x15780b2e0c2ec716ull);
    for (int i = 0; i < 1000; ++i) {
        const double u = b.uniform();
        ASSERT_GE(u, 0.0);
        ASSERT_LT(u, 1.0);
    }
}

TEST(Sampler, GreedyPicksArgmaxLowestOnTies) {
    Sampler s(no_filters(0.0f));
    const std::vector<float> logits = {0.5f, 3.0f, -1.0f, 3.0f, 2.9f};
    for (int i = 0; i < 5; ++i) EXPECT_EQ(s.sample(logits.data(), 5), 1);
    ASSERT_EQ(s.last_candidates().size(), 1u);
    EXPECT_EQ(s.last_candidates()[0].prob, 1.0f);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> with_nan = {nan, -2.0f, -1.0f};
    EXPECT_EQ(s.sample(with_nan.data(), 3), 2);
}

TEST(Sampler, TopKOneEqualsGreedy) {
    SamplerParams p = no_filters(1.5f, 7);
    p.top_k = 1;
    Sampler top1(p), greedy(no_filters(0.0f));
    for (uint64_t trial = 0; trial < 50; ++trial) {
        const auto logits = pseudo_random_logits(300, trial);
        EXPECT_EQ(top1.sample(logits.data(), 300), greedy.sample(logits.data(), 300));
    }
}

TEST(Sampler, TopKExcludesTheRest) {
    SamplerParams p = no_filters(1.0f, 3);
    p.top_k = 2;
    Sampler s(p);
    const auto f = frequencies(s, log_probs({0.1, 0.4, 0.15, 0.35}), 4000);
    EXPECT_EQ(f.count(0), 0u);
    EXPECT_EQ(f.count(2), 0u);
    EXPECT_NEAR(f.at(1), 0.4 / 0.75, 0.03);
}

TEST(Sampler, TemperatureOneDrawsFromTheSoftmax) {
    Sampler s(no_filters(1.0f, 11));
    const std::vector<double> probs = {0.1, 0.2, 0.3, 0.4};
    const auto f = frequencies(s, log_probs(probs), 20000);
    for (int t = 0; t < 4; ++t) EXPECT_NEAR(f.at(t), probs[t], 0.015) << t;

    // Temperature 2 flattens: p^(1/2), renormalised.
    Sampler hot(no_filters(2.0f, 12));
    const auto fh = frequencies(hot, log_probs(probs), 20000);
    double z = 0;
    for (double p : probs) z += std::sqrt(p);
    for (int t = 0; t < 4; ++t) EXPECT_NEAR(fh.at(t), std::sqrt(probs[t]) / z, 0.015) << t;
}

TEST(Sampler, TopPKeepsTheSmallestNucleus) {
    SamplerParams p = no_filters(1.0f, 5);
    p.top_p = 0.75f;  // 0.5, then 0.5 + 0.3 = 0.8 >= 0.75: tokens 3 and 1 only
    Sampler s(p);
    const auto logits = log_probs({0.15, 0.3, 0.05, 0.5});
    const auto f = frequencies(s, logits, 4000);
    EXPECT_EQ(f.count(0), 0u);
    EXPECT_EQ(f.count(2), 0u);
    EXPECT_NEAR(f.at(3), 0.5 / 0.8, 0.03);
    ASSERT_EQ(s.last_candidates().size(), 2u);
    EXPECT_EQ(s.last_candidates()[0].token, 3);

    p.top_p = 0.85f;  // now token 0 (0.15) is needed too, token 2 still not
    Sampler wider(p);
    const auto fw = frequencies(wider, logits, 4000);
    EXPECT_GT(fw.count(0), 0u);
    EXPECT_EQ(fw.count(2), 0u);
}

TEST(Sampler, MinPDropsUnlikelyTokens) {
    SamplerParams p = no_filters(1.0f, 9);
    p.min_p = 0.2f;  // threshold 0.2 * 0.5 = 0.1: token 2 (0.05) goes
    Sampler s(p);
    const auto logits = log_probs({0.15, 0.3, 0.05, 0.5});
    const auto f = frequencies(s, logits, 6000);
    EXPECT_EQ(f.count(2), 0u);
    EXPECT_NEAR(f.at(0), 0.15 / 0.95, 0.02);
    p.min_p = 0.35f;  // threshold 0.175: token 0 goes as well
    Sampler strict(p);
    const auto fs = frequencies(strict, logits, 2000);
    EXPECT_EQ(fs.count(0), 0u);
    EXPECT_EQ(fs.count(2), 0u);
}

TEST(Sampler, RepeatPenaltyChangesTheChoice) {
    SamplerParams p = no_filters(0.0f);
    p.repeat_penalty = 1.5f;
    Sampler s(p);
    const std::vector<float> logits = {2.0f, 1.9f, -1.0f, -1.2f};
    EXPECT_EQ(s.sample(logits.data(), 4), 0);
    s.accept(0);
    EXPECT_EQ(s.sample(logits.data(), 4), 1);  // 2 / 1.5 = 1.33 < 1.9

    // Negative logits are multiplied: -1 * 1.5 = -1.5 < -1.2.
    const std::vector<float> negative = {-1.0f, -1.2f};
    Sampler n(p);
    n.accept(0);
    EXPECT_EQ(n.sample(negative.data(), 2), 1);

    // The window: after repeat_last_n = 2 other tokens, token 0 is no longer penalised.
    p.repeat_last_n = 2;
    Sampler w(p);
    w.accept(0);
    w.accept(3);
    EXPECT_EQ(w.sample(logits.data(), 4), 1);
    w.accept(3);
    EXPECT_EQ(w.sample(logits.data(), 4), 0);
}

TEST(Sampler, PresenceAndFrequencyPenalties) {
    const std::vector<float> logits = {2.0f, 1.9f};
    SamplerParams p = no_filters(0.0f);
    p.presence_penalty = 0.2f;
    Sampler pres(p);
    pres.accept(0);
    EXPECT_EQ(pres.sample(logits.data(), 2), 1);

    p = no_filters(0.0f);
    p.frequency_penalty = 0.06f;
    Sampler freq(p);
    freq.accept(0);  // 2 - 0.06 = 1.94 still wins
    EXPECT_EQ(freq.sample(logits.data(), 2), 0);
    freq.accept(0);  // 2 - 0.12 = 1.88 loses
    EXPECT_EQ(freq.sample(logits.data(), 2), 1);

    p.repeat_last_n = 0;  // penalties off
    Sampler off(p);
    off.accept(0);
    off.accept(0);
    EXPECT_EQ(off.sample(logits.data(), 2), 0);
}

TEST(Sampler, SameSeedSameSequenceDifferentSeedsDiffer) {
    SamplerParams p;  // defaults: temperature 0.8, top-k 40, top-p 0.95, min-p 0.05
    p.seed = 1234;
    Sampler a(p), b(p);
    p.seed = 1235;
    Sampler c(p);
    const auto logits = log_probs(std::vector<double>(50, 1.0 / 50));  // uniform: many candidates
    std::vector<int32_t> sa, sb, sc;
    for (int i = 0; i < 200; ++i) {
        sa.push_back(a.sample(logits.data(), 50));
        sb.push_back(b.sample(logits.data(), 50));
        sc.push_back(c.sample(logits.data(), 50));
    }
    EXPECT_EQ(sa, sb);
    EXPECT_NE(sa, sc);

    // reset() restarts the sequence and forgets the history.
    a.reset();
    std::vector<int32_t> again;
    for (int i = 0; i < 200; ++i) again.push_back(a.sample(logits.data(), 50));
    EXPECT_EQ(again, sa);
}

TEST(Sampler, RejectsUnusableInput) {
    Sampler s(no_filters(1.0f));
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> dead = {-inf, std::numeric_limits<float>::quiet_NaN()};
    EXPECT_THROW(s.sample(dead.data(), 2), SamplingError);
    EXPECT_THROW(s.sample(dead.data(), 0), SamplingError);
    SamplerParams bad = no_filters(1.0f);
    bad.repeat_penalty = 0.0f;
    EXPECT_THROW(Sampler{bad}, std::invalid_argument);
    // A masked vocabulary (-inf) never yields a masked token.
    const std::vector<float> masked = {-inf, 0.0f, -inf, 0.0f};
    for (int i = 0; i < 200; ++i) {
        const int32_t t = s.sample(masked.data(), 4);
        EXPECT_TRUE(t == 1 || t == 3) << t;
    }
}

// validate() names the parameter and its rule; every out-of-range value is refused.
TEST(Sampler, ValidateRejectsOutOfRangeParameters) {
    static constexpr float nan = std::numeric_limits<float>::quiet_NaN();
    static constexpr float inf = std::numeric_limits<float>::infinity();
    auto message = [](const SamplerParams& p) -> std::string {
        try {
            vkllm::validate(p);
        } catch (const std::invalid_argument& e) {
            return e.what();
        }
        return "";
    };
    EXPECT_EQ(message(SamplerParams{}), "");
    SamplerParams greedy;
    greedy.temperature = -1.0f;  // any temperature <= 0 is greedy
    EXPECT_EQ(message(greedy), "");
    const struct {
        const char* name;
        void (*set)(SamplerParams&);
    } cases[] = {
        {"temperature", [](SamplerParams& p) { p.temperature = nan; }},
        {"temperature", [](SamplerParams& p) { p.temperature = inf; }},
        {"top_p", [](SamplerParams& p) { p.top_p = nan; }},
        {"top_p", [](SamplerParams& p) { p.top_p = 1.5f; }},
        {"top_p", [](SamplerParams& p) { p.top_p = -0.1f; }},
        {"min_p", [](SamplerParams& p) { p.min_p = nan; }},
        {"min_p", [](SamplerParams& p) { p.min_p = 2.0f; }},
        {"repeat_penalty", [](SamplerParams& p) { p.repeat_penalty = 0.0f; }},
        {"repeat_penalty", [](SamplerParams& p) { p.repeat_penalty = nan; }},
        {"presence_penalty", [](SamplerParams& p) { p.presence_penalty = inf; }},
        {"frequency_penalty", [](SamplerParams& p) { p.frequency_penalty = nan; }},
    };
    for (const auto& c : cases) {
        SamplerParams p;
        c.set(p);
        const std::string m = message(p);
        EXPECT_NE(m.find(std::string("sampler parameter ") + c.name), std::string::npos) << c.name << ": " << m;
        EXPECT_THROW(Sampler{p}, std::invalid_argument) << c.name;
    }
}

TEST(Sampler, LogSoftmaxIsTheModelsDistribution) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> logits = {1.0f, 2.0f, nan, -inf, 0.5f};
    const std::vector<double> lp = log_softmax(logits.data(), 5);
    const double z = std::exp(1.0) + std::exp(2.0) + std::exp(0.5);
    EXPECT_NEAR(lp[0], 1.0 - std::log(z), 1e-12);
    EXPECT_NEAR(lp[1], 2.0 - std::log(z), 1e-12);
    EXPECT_NEAR(lp[4], 0.5 - std::log(z), 1e-12);
    EXPECT_TRUE(std::isinf(lp[2]) && lp[2] < 0);
    EXPECT_TRUE(std::isinf(lp[3]) && lp[3] < 0);
    const std::vector<float> two_inf = {inf, 0.0f, inf};
    const std::vector<double> li = log_softmax(two_inf.data(), 3);
    EXPECT_NEAR(li[0], std::log(0.5), 1e-12);
    EXPECT_TRUE(std::isinf(li[1]));
    const std::vector<float> dead = {nan, -inf};
    EXPECT_THROW(log_softmax(dead.data(), 2), SamplingError);
}

// The funnel: stages in order, candidates and mass never grow, the last stage holds the
// distribution drawn from, and the recorded counts are what each filter keeps.
TEST(Sampler, FunnelStagesShrinkAndDescribeTheFilters) {
    const auto logits = pseudo_random_logits(300, 5);
    SamplerParams p;
    p.temperature = 0.7f;
    p.top_k = 50;
    p.top_p = 0.9f;
    p.min_p = 0.05f;
    p.seed = 3;
    Sampler with_funnel(p), without(p);
    const char* names[] = {"vocabulary", "penalties", "top_k", "top_p", "min_p", "temperature"};
    for (int i = 0; i < 20; ++i) {
        vkllm::SamplerFunnel f;
        const int32_t t = with_funnel.sample(logits.data(), 300, &f);
        EXPECT_EQ(t, without.sample(logits.data(), 300)) << "the funnel must not change the draw";
        ASSERT_EQ(f.stages.size(), 6u);
        for (size_t s = 0; s < 6; ++s) EXPECT_EQ(f.stages[s].stage, names[s]);
        EXPECT_EQ(f.stages[0].candidates, 300);
        EXPECT_NEAR(f.stages[0].mass, 1.0, 1e-6);
        EXPECT_EQ(f.stages[2].candidates, 50);
        for (size_t s = 1; s < 6; ++s) {
            EXPECT_LE(f.stages[s].candidates, f.stages[s - 1].candidates);
            EXPECT_LE(f.stages[s].mass, f.stages[s - 1].mass + 1e-6f);
        }
        EXPECT_GE(f.stages[3].mass, 0.0f);
        EXPECT_EQ(size_t(f.stages[5].candidates), with_funnel.last_candidates().size());
        // The chosen token's rank under the raw logits.
        int rank = 0;
        for (int32_t u = 0; u < 300; ++u) rank += logits[u] > logits[t];
        EXPECT_EQ(f.chosen_rank, rank);
        EXPECT_LT(f.chosen_rank, 50);
        EXPECT_GT(f.chosen_p, 0.0f);
    }
    // Greedy: the filters are not applied; the temperature stage keeps the argmax alone.
    Sampler greedy(no_filters(0.0f));
    vkllm::SamplerFunnel g;
    const int32_t best = greedy.sample(logits.data(), 300, &g);
    ASSERT_EQ(g.stages.size(), 6u);
    EXPECT_EQ(g.stages[4].candidates, 300);
    EXPECT_EQ(g.stages[5].candidates, 1);
    EXPECT_EQ(g.chosen_rank, 0);
    EXPECT_EQ(g.chosen_p, 1.0f);
    EXPECT_NEAR(g.stages[5].mass, std::exp(log_softmax(logits.data(), 300)[size_t(best)]), 1e-6);
}
