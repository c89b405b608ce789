// Reference attention: hand-computed cases, masks (causal, window, chunk), GQA head mapping,
// soft-capping, sinks, ALiBi, and invariants of the softmax probabilities.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "cpu/ref_ops.h"
#include "test_support.h"

using namespace vkllm;

namespace {

AttentionParams params(int n_head, int n_head_kv, int head_dim, int head_dim_v, bool causal = true) {
    AttentionParams p;
    p.n_head = n_head;
    p.n_head_kv = n_head_kv;
    p.head_dim = head_dim;
    p.head_dim_v = head_dim_v;
    p.scale = 1.0f / std::sqrt(float(head_dim));
    p.causal = causal;
    return p;
}

std::vector<int32_t> iota_pos(int64_t n, int32_t start = 0) {
    std::vector<int32_t> v(n);
    std::iota(v.begin(), v.end(), start);
    return v;
}

struct Result { std::vector<float> out, probs; };
Result run(const AttentionParams& p, const std::vector<float>& q, const std::vector<float>& k,
           const std::vector<float>& v, const std::vector<int32_t>& q_pos, const std::vector<int32_t>& k_pos,
           const float* sinks = nullptr) {
    const int64_t n_q = q_pos.size(), n_kv = k_pos.size();
    Result r{std::vector<float>(n_q * p.n_head * p.head_dim_v), std::vector<float>(n_q * p.n_head * n_kv)};
    cpu::attention(q.data(), k.data(), v.data(), q_pos.data(), k_pos.data(), r.out.data(), r.probs.data(), n_q, n_kv, p,
                   sinks);
    return r;
}

}  // namespace

TEST(Attention, HandComputedTwoKeys) {
    AttentionParams p = params(1, 1, 2, 2, false);
    p.scale = 1.0f;
    // logits: q.k0 = 1, q.k1 = 0 -> probs (e, 1) / (1 + e); out = p0 v0 + p1 v1
    const auto r = run(p, {1, 0}, {1, 0, 0, 0}, {1, 0, 0, 1}, {0}, {0, 1});
    const float p0 = float(std::exp(1.0) / (1 + std::exp(1.0)));
    EXPECT_NEAR(r.probs[0], p0, 1e-6);
    EXPECT_NEAR(r.probs[1], 1 - p0, 1e-6);
    EXPECT_NEAR(r.out[0], p0, 1e-6);
    EXPECT_NEAR(r.out[1], 1 - p0, 1e-6);
}

TEST(Attention, SingleVisibleKeyCopiesItsValue) {
    AttentionParams p = params(2, 1, 4, 3);
    const auto q = test::random_floats(2 * 4, 1), k = test::random_floats(4, 2), v = test::random_floats(3, 3);
    const auto r = run(p, q, k, v, {5}, {5});
    for (int h = 0; h < 2; ++h)
        for (int d = 0; d < 3; ++d) EXPECT_FLOAT_EQ(r.out[h * 3 + d], v[d]);
}

TEST(Attention, ProbabilityRowsSumToOneAndCausalMaskHolds) {
    const int n_q = 5, n_kv = 9, n_head = 4, n_head_kv = 2, hd = 8;
    AttentionParams p = params(n_head, n_head_kv, hd, hd);
    const auto q = test::random_floats(n_q * n_head * hd, 4), k = test::random_floats(n_kv * n_head_kv * hd, 5),
               v = test::random_floats(n_kv * n_head_kv * hd, 6);
    const auto q_pos = iota_pos(n_q, 4), k_pos = iota_pos(n_kv);  // queries at 4..8 over keys 0..8
    const auto r = run(p, q, k, v, q_pos, k_pos);
    for (int i = 0; i < n_q; ++i)
        for (int h = 0; h < n_head; ++h) {
            double sum = 0;
            for (int j = 0; j < n_kv; ++j) {
                const float pr = r.probs[(i * n_head + h) * n_kv + j];
                EXPECT_EQ(pr > 0.0f, k_pos[j] <= q_pos[i]) << "query " << q_pos[i] << ", key " << k_pos[j];
                sum += pr;
            }
            EXPECT_NEAR(sum, 1.0, 1e-6);
        }
}

TEST(Attention, SlidingWindowAndChunks) {
    const int n_kv = 12, hd = 4;
    const auto k = test::random_floats(n_kv * hd, 7), v = test::random_floats(n_kv * hd, 8);
    const auto q = test::random_floats(hd, 9);
    AttentionParams p = params(1, 1, hd, hd);
    p.window = 4;  // a query at 10 sees 7, 8, 9, 10
    auto r = run(p, q, k, v, {10}, iota_pos(n_kv));
    for (int j = 0; j < n_kv; ++j) EXPECT_EQ(r.probs[j] > 0.0f, j >= 7 && j <= 10) << j;
    EXPECT_TRUE(cpu::attention_visible(10, 7, p));
    EXPECT_FALSE(cpu::attention_visible(10, 6, p));

    p.window = 0;
    p.chunk = 4;  // a query at 10 sees 8, 9, 10 (its chunk [8, 12), causal)
    r = run(p, q, k, v, {10}, iota_pos(n_kv));
    for (int j = 0; j < n_kv; ++j) EXPECT_EQ(r.probs[j] > 0.0f, j >= 8 && j <= 10) << j;
    p.causal = false;  // now the whole chunk, 8..11
    r = run(p, q, k, v, {10}, iota_pos(n_kv));
    for (int j = 0; j < n_kv; ++j) EXPECT_EQ(r.probs[j] > 0.0f, j >= 8) << j;
}

TEST(Attention, WindowEqualsAttentionOverTheWindowOnly) {
    const int hd = 6, n_kv = 10;
    const auto q = test::random_floats(hd, 10), k = test::random_floats(n_kv * hd, 11),
               v = test::random_floats(n_kv * hd, 12);
    AttentionParams p = params(1, 1, hd, hd);
    p.window = 3;
    const auto windowed = run(p, q, k, v, {9}, iota_pos(n_kv));
    p.window = 0;
    const std::vector<float> k_tail(k.end() - 3 * hd, k.end()), v_tail(v.end() - 3 * hd, v.end());
    const auto tail = run(p, q, k_tail, v_tail, {9}, {7, 8, 9});
    EXPECT_LT(test::max_abs_diff(windowed.out, tail.out), 1e-6);
}

TEST(Attention, GqaHeadMapping) {
    // 6 query heads over 2 kv heads: heads 0-2 read kv head 0, heads 3-5 kv head 1. The result
    // must equal plain multi-head attention with each kv head repeated for its query heads.
    const int n_q = 3, n_kv = 4, n_head = 6, n_head_kv = 2, hd = 5, hdv = 3;
    const auto q = test::random_floats(n_q * n_head * hd, 13), k = test::random_floats(n_kv * n_head_kv * hd, 14),
               v = test::random_floats(n_kv * n_head_kv * hdv, 15);
    std::vector<float> k_rep(n_kv * n_head * hd), v_rep(n_kv * n_head * hdv);
    for (int j = 0; j < n_kv; ++j)
        for (int h = 0; h < n_head; ++h) {
            const int hk = h / 3;
            for (int d = 0; d < hd; ++d) k_rep[(j * n_head + h) * hd + d] = k[(j * n_head_kv + hk) * hd + d];
            for (int d = 0; d < hdv; ++d) v_rep[(j * n_head + h) * hdv + d] = v[(j * n_head_kv + hk) * hdv + d];
        }
    const auto pos_q = iota_pos(n_q, 1), pos_k = iota_pos(n_kv);
    const auto gqa = run(params(n_head, n_head_kv, hd, hdv), q, k, v, pos_q, pos_k);
    const auto mha = run(params(n_head, n_head, hd, hdv), q, k_rep, v_rep, pos_q, pos_k);
    EXPECT_EQ(gqa.out, mha.out);
    EXPECT_EQ(gqa.probs, mha.probs);
    // The interleaved mapping (h % n_head_kv) is a different result, so the check above has teeth.
    std::vector<float> k_wrong(k_rep.size());
    for (int j = 0; j < n_kv; ++j)
        for (int h = 0; h < n_head; ++h)
            for (int d = 0; d < hd; ++d) k_wrong[(j * n_head + h) * hd + d] = k[(j * n_head_kv + h % 2) * hd + d];
    EXPECT_NE(run(params(n_head, n_head, hd, hdv), q, k_wrong, v_rep, pos_q, pos_k).probs, gqa.probs);
}

TEST(Attention, KeyOrderDoesNotMatterOnlyPositions) {
    const int hd = 4, n_kv = 5;
    const auto q = test::random_floats(hd, 16), k = test::random_floats(n_kv * hd, 17),
               v = test::random_floats(n_kv * hd, 18);
    AttentionParams p = params(1, 1, hd, hd);
    p.window = 4;
    const auto a = run(p, q, k, v, {4}, iota_pos(n_kv));
    // reverse the cache rows (as a ring buffer might hold them)
    std::vector<float> k_rev, v_rev;
    std::vector<int32_t> pos_rev;
    for (int j = n_kv - 1; j >= 0; --j) {
        k_rev.insert(k_rev.end(), k.begin() + j * hd, k.begin() + (j + 1) * hd);
        v_rev.insert(v_rev.end(), v.begin() + j * hd, v.begin() + (j + 1) * hd);
        pos_rev.push_back(j);
    }
    const auto b = run(p, q, k_rev, v_rev, {4}, pos_rev);
    EXPECT_LT(test::max_abs_diff(a.out, b.out), 1e-6);
    for (int j = 0; j < n_kv; ++j) EXPECT_NEAR(a.probs[j], b.probs[n_kv - 1 - j], 1e-7);
}

TEST(Attention, SoftcapBoundsLogits) {
    AttentionParams p = params(1, 1, 1, 1, false);
    p.scale = 1.0f;
    p.softcap = 1.0f;  // logits (100, 0) become (tanh 100, 0) = (1, 0)
    const auto r = run(p, {100}, {1, 0}, {1, 0}, {0}, {0, 1});
    EXPECT_NEAR(r.probs[0], std::exp(1.0) / (1 + std::exp(1.0)), 1e-6);
    p.softcap = 0.0f;  // uncapped: essentially all on key 0
    EXPECT_GT(run(p, {100}, {1, 0}, {1, 0}, {0}, {0, 1}).probs[0], 0.999999f);
}

TEST(Attention, SinksTakeProbabilityMassWithoutValue) {
    const int n_head = 2, hd = 4, n_kv = 3;
    const auto q = test::random_floats(n_head * hd, 19), k = test::random_floats(n_kv * hd, 20),
               v = test::random_floats(n_kv * hd, 21);
    AttentionParams p = params(n_head, 1, hd, hd);
    const auto plain = run(p, q, k, v, {2}, iota_pos(n_kv));
    const float sinks[] = {0.5f, -50.0f};
    const auto with = run(p, q, k, v, {2}, iota_pos(n_kv), sinks);
    // Head 0: every probability shrinks by the same factor Z / (Z + e^sink), Z = sum_j e^logit_j.
    double z = 0;
    for (int j = 0; j < n_kv; ++j) {
        double dot = 0;
        for (int d = 0; d < hd; ++d) dot += double(q[d]) * k[j * hd + d];
        z += std::exp(dot * p.scale);
    }
    const double shrink = z / (z + std::exp(0.5));
    double sum = 0;
    for (int j = 0; j < n_kv; ++j) {
        EXPECT_NEAR(with.probs[j], plain.probs[j] * shrink, 1e-6);
        sum += with.probs[j];
    }
    EXPECT_LT(sum, 0.999);
    for (int d = 0; d < hd; ++d) EXPECT_NEAR(with.out[d], plain.out[d] * shrink, 1e-6);
    // Head 1: a sink of -50 changes nothing visible.
    for (int j = 0; j < n_kv; ++j) EXPECT_NEAR(with.probs[n_kv + j], plain.probs[n_kv + j], 1e-7);
}

TEST(Attention, QueryThatSeesNothingGetsZeros) {
    AttentionParams p = params(1, 1, 2, 2);
    const auto r = run(p, {1, 1}, {1, 1, 1, 1}, {3, 3, 3, 3}, {0}, {1, 2});  // both keys in the future
    EXPECT_EQ(r.out, (std::vector<float>{0, 0}));
    EXPECT_EQ(r.probs, (std::vector<float>{0, 0}));
}

// ALiBi: with equal logits, each key's weight is exp(-slope * distance); 3 heads (not a power of
// two) take slopes 2^-4, 2^-8 (the first two) and 2^-2 (the odd term of the 4-head sequence).
TEST(Attention, AlibiPenalisesDistancePerHead) {
    const int n_head = 3, n_kv = 4;
    AttentionParams p = params(n_head, 1, 2, 2, false);
    p.max_alibi_bias = 8.0f;
    EXPECT_DOUBLE_EQ(p.alibi_slope(0), 1.0 / 16);
    EXPECT_DOUBLE_EQ(p.alibi_slope(1), 1.0 / 256);
    EXPECT_DOUBLE_EQ(p.alibi_slope(2), 1.0 / 4);
    const std::vector<float> q(n_head * 2, 0.0f), k(n_kv * 2, 1.0f), v(n_kv * 2, 1.0f);
    const auto r = run(p, q, k, v, {2}, iota_pos(n_kv));  // distances 2, 1, 0, 1 (non-causal: both sides)
    for (int h = 0; h < n_head; ++h) {
        const double s = p.alibi_slope(h);
        const double w[4] = {std::exp(-2 * s), std::exp(-s), 1.0, std::exp(-s)};
        const double sum = w[0] + w[1] + w[2] + w[3];
        for (int j = 0; j < n_kv; ++j) EXPECT_NEAR(r.probs[h * n_kv + j], w[j] / sum, 1e-7) << "head " << h;
    }
    p.max_alibi_bias = -1.0f;
    EXPECT_THROW(run(p, q, k, v, {2}, iota_pos(n_kv)), cpu::ShapeError);
}

TEST(Attention, MlaShapesAndNullProbs) {
    // head_dim 6 for q/k, 4 for v (DeepSeek MLA shapes); probs_out may be null.
    const int hd = 6, hdv = 4, n_kv = 3;
    AttentionParams p = params(2, 2, hd, hdv);
    const auto q = test::random_floats(2 * hd, 22), k = test::random_floats(n_kv * 2 * hd, 23),
               v = test::random_floats(n_kv * 2 * hdv, 24);
    const auto pos = iota_pos(n_kv);
    std::vector<float> out(2 * hdv);
    const int32_t qp = 2;
    cpu::attention(q.data(), k.data(), v.data(), &qp, pos.data(), out.data(), nullptr, 1, n_kv, p);
    EXPECT_EQ(out, run(p, q, k, v, {2}, pos).out);
}

TEST(Attention, RejectsBadHeadCounts) {
    std::vector<float> buf(64);
    const int32_t pos = 0;
    EXPECT_THROW(cpu::attention(buf.data(), buf.data(), buf.data(), &pos, &pos, buf.data(), nullptr, 1, 1,
                                params(3, 2, 4, 4)),
                 cpu::ShapeError);
}
