// Rotary position embedding: hand-computed rotations, partial rotary, pair layouts, scaling
// variants (linear, YaRN, Llama 3) and the invariants RoPE exists for.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cpu/ref_ops.h"
#include "test_support.h"

using namespace vkllm;
using cpu::RopeParams;

namespace {

RopeParams plain(int n_dims, bool neox, float base = 10000.0f) {
    RopeParams p;
    p.n_dims = n_dims;
    p.neox = neox;
    p.freq_base = base;
    return p;
}

// The angle by which `p` rotates pair `pair` of a one-head vector at position `pos`, and the
// magnitude it applies, found by rotating the unit vector (1, 0).
struct Rotation { double angle, magnitude; };
Rotation measure(const RopeParams& p, int head_dim, int pair, int32_t pos) {
    std::vector<float> x(head_dim, 0.0f);
    const int i0 = p.neox ? pair : 2 * pair;
    const int i1 = p.neox ? pair + p.n_dims / 2 : 2 * pair + 1;
    x[i0] = 1.0f;
    cpu::rope(x.data(), 1, 1, head_dim, &pos, p);
    return {std::atan2(double(x[i1]), double(x[i0])), std::hypot(double(x[i0]), double(x[i1]))};
}

// Angle difference folded into (-pi, pi].
double wrap(double a) { return std::remainder(a, 2 * M_PI); }

double dot(const float* a, const float* b, int n) {
    double s = 0;
    for (int i = 0; i < n; ++i) s += double(a[i]) * b[i];
    return s;
}

}  // namespace

TEST(Rope, HandComputedAdjacentPairs) {
    // head_dim 4, pos 1: pair 0 turns by 1 rad, pair 1 by 10000^(-1/2) = 0.01 rad.
    std::vector<float> x = {1, 0, 1, 0};
    const int32_t pos = 1;
    cpu::rope(x.data(), 1, 1, 4, &pos, plain(4, false));
    EXPECT_NEAR(x[0], std::cos(1.0), 1e-6);
    EXPECT_NEAR(x[1], std::sin(1.0), 1e-6);
    EXPECT_NEAR(x[2], std::cos(0.01), 1e-6);
    EXPECT_NEAR(x[3], std::sin(0.01), 1e-6);
}

TEST(Rope, HandComputedNeoxPairs) {
    // NeoX pairs (0, 2) and (1, 3).
    std::vector<float> x = {1, 1, 0, 0};
    const int32_t pos = 1;
    cpu::rope(x.data(), 1, 1, 4, &pos, plain(4, true));
    EXPECT_NEAR(x[0], std::cos(1.0), 1e-6);
    EXPECT_NEAR(x[1], std::cos(0.01), 1e-6);
    EXPECT_NEAR(x[2], std::sin(1.0), 1e-6);
    EXPECT_NEAR(x[3], std::sin(0.01), 1e-6);
}

TEST(Rope, PartialRotaryLeavesTailUntouchedAndUsesNDimsForFrequencies) {
    // n_dims 4 of head_dim 6, two heads, two tokens.
    auto x = test::random_floats(2 * 2 * 6, 1);
    auto orig = x;
    const int32_t pos[] = {3, 7};
    for (bool neox : {false, true}) {
        x = orig;
        cpu::rope(x.data(), 2, 2, 6, pos, plain(4, neox));
        for (int row = 0; row < 4; ++row) {
            EXPECT_EQ(x[row * 6 + 4], orig[row * 6 + 4]);
            EXPECT_EQ(x[row * 6 + 5], orig[row * 6 + 5]);
            EXPECT_NE(x[row * 6 + 0], orig[row * 6 + 0]);
        }
        // pair 1 of 4 rotated dims turns by pos * base^(-2/4)
        const auto r = measure(plain(4, neox), 6, 1, 7);
        EXPECT_NEAR(wrap(r.angle - 7 * 0.01), 0.0, 1e-6);
    }
}

TEST(Rope, PositionZeroIsIdentityAndNormsArePreserved) {
    const int n_tokens = 3, n_heads = 2, head_dim = 16;
    const auto orig = test::random_floats(n_tokens * n_heads * head_dim, 2);
    for (bool neox : {false, true}) {
        auto x = orig;
        const int32_t zeros[] = {0, 0, 0};
        cpu::rope(x.data(), n_tokens, n_heads, head_dim, zeros, plain(head_dim, neox));
        for (size_t i = 0; i < x.size(); ++i) EXPECT_FLOAT_EQ(x[i], orig[i]);

        x = orig;
        const int32_t pos[] = {1, 50, 4000};
        cpu::rope(x.data(), n_tokens, n_heads, head_dim, pos, plain(head_dim, neox));
        for (int row = 0; row < n_tokens * n_heads; ++row)
            for (int j = 0; j < head_dim / 2; ++j) {
                const int i0 = neox ? j : 2 * j, i1 = neox ? j + head_dim / 2 : 2 * j + 1;
                const float* a = &orig[row * head_dim];
                const float* b = &x[row * head_dim];
                EXPECT_NEAR(std::hypot(a[i0], a[i1]), std::hypot(b[i0], b[i1]), 1e-5);
            }
        EXPECT_GT(test::max_abs_diff(x, orig), 0.1);
    }
}

TEST(Rope, DotProductDependsOnlyOnRelativePosition) {
    const int head_dim = 32;
    const auto q = test::random_floats(head_dim, 3), k = test::random_floats(head_dim, 4);
    RopeParams lin = plain(head_dim, true);
    lin.scaling = RopeParams::Linear;
    lin.freq_scale = 0.25f;
    RopeParams yarn = plain(head_dim, false);
    yarn.scaling = RopeParams::Yarn;
    yarn.freq_scale = 0.125f;
    yarn.ext_factor = 1.0f;
    yarn.orig_ctx = 512;
    RopeParams llama3 = plain(head_dim, false, 500000.0f);
    llama3.scaling = RopeParams::Llama3;
    llama3.orig_ctx = 64;
    for (const RopeParams& p : {plain(head_dim, false), plain(head_dim, true), lin, yarn, llama3}) {
        auto dot_at = [&](int32_t pq, int32_t pk) {
            auto qr = q, kr = k;
            cpu::rope(qr.data(), 1, 1, head_dim, &pq, p);
            cpu::rope(kr.data(), 1, 1, head_dim, &pk, p);
            return dot(qr.data(), kr.data(), head_dim);
        };
        EXPECT_NEAR(dot_at(9, 4), dot_at(109, 104), 1e-4);
        EXPECT_NEAR(dot_at(9, 4), dot_at(5, 0), 1e-4);
        EXPECT_GT(std::fabs(dot_at(9, 4) - dot_at(4, 4)), 1e-3);  // the offset does matter
    }
}

TEST(Rope, LinearScalingDividesThePosition) {
    RopeParams lin = plain(8, false);
    lin.scaling = RopeParams::Linear;
    lin.freq_scale = 0.5f;
    for (int pair = 0; pair < 4; ++pair)
        EXPECT_NEAR(wrap(measure(lin, 8, pair, 10).angle - measure(plain(8, false), 8, pair, 5).angle), 0.0, 1e-6);
    // freq_scale is ignored without a scaling type (llama.cpp forces it to 1).
    RopeParams none = plain(8, false);
    none.freq_scale = 0.5f;
    EXPECT_NEAR(wrap(measure(none, 8, 0, 3).angle - 3.0), 0.0, 1e-6);
}

TEST(Rope, FreqFactorsDivideTheFrequency) {
    const float factors[] = {1.0f, 2.0f, 4.0f, 8.0f};
    RopeParams p = plain(8, true);
    p.freq_factors = factors;
    for (int pair = 0; pair < 4; ++pair) {
        const double expected = 3.0 * std::pow(10000.0, -2.0 * pair / 8) / factors[pair];
        EXPECT_NEAR(wrap(measure(p, 8, pair, 3).angle - expected), 0.0, 1e-6) << "pair " << pair;
    }
}

TEST(Rope, YarnCorrectionDims) {
    // dim(beta) = 128 ln(4096 / (2 pi beta)) / (2 ln 10000): 20.94 for beta 32, 45.03 for beta 1.
    float dims[2];
    cpu::yarn_corr_dims(128, 4096, 10000.0f, 32.0f, 1.0f, dims);
    EXPECT_EQ(dims[0], 20.0f);
    EXPECT_EQ(dims[1], 46.0f);
    cpu::yarn_corr_dims(8, 100, 10000.0f, 32.0f, 1.0f, dims);  // dims -0.30, 1.20: low end clamped to 0
    EXPECT_EQ(dims[0], 0.0f);
    EXPECT_EQ(dims[1], 2.0f);
    cpu::yarn_corr_dims(8, 1000000000, 10000.0f, 32.0f, 1.0f, dims);  // 6.70, 8.20: high end clamped to 7
    EXPECT_EQ(dims[0], 6.0f);
    EXPECT_EQ(dims[1], 7.0f);
}

TEST(Rope, YarnMixesExtrapolationAndInterpolationAlongTheRamp) {
    RopeParams p = plain(128, true);
    p.scaling = RopeParams::Yarn;
    p.freq_scale = 0.25f;  // factor 4
    p.ext_factor = 1.0f;
    p.attn_factor = 0.9f;
    p.orig_ctx = 4096;  // corr dims [20, 46]
    const int32_t pos = 3;
    auto theta = [&](int pair) { return pos * std::pow(10000.0, -2.0 * pair / 128); };
    const double mscale = 0.9 * (1 + 0.1 * std::log(4.0));
    // below the ramp: unscaled (extrapolated); above: interpolated; at 33: half way.
    const auto lo = measure(p, 128, 10, pos), hi = measure(p, 128, 60, pos), mid = measure(p, 128, 33, pos);
    EXPECT_NEAR(wrap(lo.angle - theta(10)), 0.0, 1e-6);
    EXPECT_NEAR(wrap(hi.angle - 0.25 * theta(60)), 0.0, 1e-7);
    EXPECT_NEAR(wrap(mid.angle - theta(33) * (0.25 * 0.5 + 0.5)), 0.0, 1e-6);
    EXPECT_NEAR(lo.magnitude, mscale, 1e-6);
    EXPECT_NEAR(hi.magnitude, mscale, 1e-6);

    // With ext_factor 0 YaRN is linear scaling times attn_factor (no ln correction).
    p.ext_factor = 0.0f;
    const auto flat = measure(p, 128, 10, pos);
    EXPECT_NEAR(wrap(flat.angle - 0.25 * theta(10)), 0.0, 1e-6);
    EXPECT_NEAR(flat.magnitude, 0.9, 1e-6);
}

TEST(Rope, YarnAttnFactorAsLlamaCpp) {
    // Plain YaRN: get_mscale(4, 1) / (1 + 0.1 ln 4) = 1.
    EXPECT_NEAR(cpu::yarn_attn_factor(0.25f, 0.0f, false), 1.0, 1e-6);
    // log_mul 0.1 (DeepSeek V3): (1 + 0.1 ln 40) / (1 + 0.01 ln 40) / (1 + 0.1 ln 40)
    EXPECT_NEAR(cpu::yarn_attn_factor(1 / 40.0f, 0.1f, false), 1 / (1 + 0.01 * std::log(40.0)), 1e-6);
    // DeepSeek V2 with log_mul 0.707: mscale = log_mul, so the ratio is 1.
    EXPECT_NEAR(cpu::yarn_attn_factor(1 / 40.0f, 0.707f, true), 1 / (1 + 0.1 * std::log(40.0)), 1e-6);
    EXPECT_NEAR(cpu::yarn_attn_factor(0.25f, 0.0f, false, 2.0f), 2.0, 1e-6);
}

TEST(Rope, Llama3FreqFactors) {
    // Llama 3.1: base 500000, head_dim 128, factor 8, low 1, high 4, orig ctx 8192.
    const auto f = cpu::llama3_freq_factors(128, 500000.0f, 8.0f, 1.0f, 4.0f, 8192);
    ASSERT_EQ(f.size(), 64u);
    for (int j = 0; j <= 28; ++j) EXPECT_EQ(f[j], 1.0f) << j;   // wavelength < 2048
    for (int j = 35; j < 64; ++j) EXPECT_EQ(f[j], 8.0f) << j;   // wavelength > 8192
    EXPECT_NEAR(f[29], 1.2074839, 1e-5);  // smooth band (values from the formula in double)
    EXPECT_NEAR(f[32], 2.6945297, 1e-5);
    EXPECT_NEAR(f[34], 5.2573266, 1e-4);

    // Scaling Llama3 without freq_factors computes them; with them given, it uses those.
    RopeParams p = plain(128, false, 500000.0f);
    p.scaling = RopeParams::Llama3;
    p.orig_ctx = 8192;
    RopeParams given = plain(128, false, 500000.0f);
    given.freq_factors = f.data();
    for (int pair : {0, 30, 63})
        EXPECT_NEAR(measure(p, 128, pair, 1000).angle, measure(given, 128, pair, 1000).angle, 1e-6);
}

TEST(Rope, RejectsBadParameters) {
    std::vector<float> x(8);
    const int32_t pos = 0;
    EXPECT_THROW(cpu::rope(x.data(), 1, 1, 8, &pos, plain(10, false)), cpu::ShapeError);
    EXPECT_THROW(cpu::rope(x.data(), 1, 1, 8, &pos, plain(3, false)), cpu::ShapeError);
    RopeParams y = plain(8, false);
    y.scaling = RopeParams::Yarn;
    y.ext_factor = 1.0f;
    EXPECT_THROW(cpu::rope(x.data(), 1, 1, 8, &pos, y), cpu::ShapeError);  // no orig_ctx
}
