// engine/core's shared selection and softmax: top_n and its streaming form top_n_by pick the same
// indices in the same order (ties to the lower index), softmax_in_place sums to 1 and gives an
// all-masked row zeros.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/softmax.h"
#include "core/top_n.h"

namespace vkllm {
namespace {

TEST(TopN, LargestFirstTiesToTheLowerIndex) {
    const std::vector<float> v{1.0f, 3.0f, 2.0f, 3.0f, -1.0f};
    EXPECT_EQ(top_n(v.data(), v.size(), 3), (std::vector<int32_t>{1, 3, 2}));
    EXPECT_EQ(top_n(v.data(), v.size(), 9).size(), 5u);  // n past the count: every index
    EXPECT_TRUE(top_n(v.data(), v.size(), 0).empty());
}

TEST(TopN, StreamingFormEqualsTheSortedOne) {
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> few(0, 9);  // many ties
    for (size_t count : {size_t(0), size_t(1), size_t(17), size_t(1000)}) {
        std::vector<float> v(count);
        for (float& x : v) x = float(few(rng)) - 4.5f;
        for (size_t n : {size_t(0), size_t(1), size_t(5), size_t(2000)}) {
            const std::vector<int32_t> sorted = top_n(v.data(), v.size(), n);
            const std::vector<size_t> streamed = top_n_by(v.size(), n, [&](size_t i) { return v[i]; });
            ASSERT_EQ(streamed.size(), sorted.size()) << count << " " << n;
            for (size_t j = 0; j < sorted.size(); ++j) EXPECT_EQ(streamed[j], size_t(sorted[j])) << count << " " << n;
        }
    }
    // By a key other than the value: the largest magnitudes.
    const std::vector<float> v{0.5f, -4.0f, 3.0f, 4.0f};
    EXPECT_EQ(top_n_by(v.size(), 2, [&](size_t i) { return std::fabs(v[i]); }), (std::vector<size_t>{1, 3}));
}

TEST(Softmax, SumsToOneAndMasksEverything) {
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> z{1.0, 2.0, -inf, 3.0};
    softmax_in_place(z.data(), z.size());
    EXPECT_NEAR(z[0] + z[1] + z[2] + z[3], 1.0, 1e-15);
    EXPECT_EQ(z[2], 0.0);
    EXPECT_NEAR(z[3] / z[1], std::exp(1.0), 1e-12);
    std::vector<double> masked{-inf, -inf};
    softmax_in_place(masked.data(), masked.size());
    EXPECT_EQ(masked, (std::vector<double>{0.0, 0.0}));
}

}  // namespace
}  // namespace vkllm
