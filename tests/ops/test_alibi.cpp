// ALiBi inside the attention kernel against the CPU reference: head counts that are and are not
// powers of two (3, 12, 40: the second half of the slopes), prompt and decode (split over the
// keys), MHA/GQA/MQA, windows, sinks and soft-caps together with it, probabilities, every cache
// type, and keys after the query (non-causal: the distance is |q_pos - k_pos|).
#include <gtest/gtest.h>

#include <cmath>

#include "attention_check.h"

namespace vkllm {
namespace {

using attention_test::Case;

class Alibi : public attention_test::Attention {};

Case alibi_case(int n_head, int n_head_kv, int head_dim, int64_t n_q, int64_t n_kv) {
    Case c;
    c.n_head = n_head;
    c.n_head_kv = n_head_kv;
    c.head_dim = head_dim;
    c.n_q = n_q;
    c.n_kv = n_kv;
    c.scratch = n_q == 1;
    c.max_alibi_bias = 8.0f;
    return c;
}

// The slopes as llama.cpp computes them (ggml_soft_max_ext): m0^(h+1) for the first n_log2 heads,
// m1^(2(h - n_log2) + 1) for the rest. It works in float: m0's rounding raised to the 64th power
// leaves a few 1e-6 of relative difference from the exact powers of two.
TEST(AlibiSlopes, MatchLlamaCppForEveryHeadCount) {
    for (int n_head : {1, 3, 8, 12, 40, 64})
        for (float max_bias : {8.0f, 2.5f}) {
            AttentionParams p;
            p.n_head = n_head;
            p.max_alibi_bias = max_bias;
            const uint32_t n_log2 = 1u << uint32_t(std::floor(std::log2(n_head)));
            const float m0 = std::pow(2.0f, -max_bias / float(n_log2));
            const float m1 = std::pow(2.0f, -(max_bias / 2.0f) / float(n_log2));
            for (int h = 0; h < n_head; ++h) {
                const float want = uint32_t(h) < n_log2 ? std::pow(m0, float(h + 1))
                                                        : std::pow(m1, float(2 * (h - int(n_log2)) + 1));
                EXPECT_NEAR(p.alibi_slope(h), want, 1e-5 * want) << n_head << " heads, head " << h;
            }
        }
    AttentionParams none;
    none.n_head = 12;
    EXPECT_EQ(none.alibi_slope(3), 0.0);
}

TEST_F(Alibi, PromptAndDecodeOverHeadCounts) {
    // 3 heads (MHA, scalar key loads), 12 over 4 kv heads (GQA), 40 over 1 (MQA, Falcon's shape).
    for (auto [h, kv, d] : {std::tuple{3, 3, 6}, {12, 4, 64}, {40, 1, 32}})
        for (auto [n_q, n_kv] : {std::pair<int64_t, int64_t>{40, 130}, {1, 700}}) check(alibi_case(h, kv, d, n_q, n_kv));
}

TEST_F(Alibi, WithAWindowSinksSoftcapAndProbabilities) {
    Case c = alibi_case(12, 4, 64, 40, 130);
    c.window = 16;
    c.probs = true;
    c.ring = true;
    c.empty_slots = 5;
    check(c);
    c.sinks = true;
    c.softcap = 20.0f;
    c.q_gain = 8.0f;
    check(c);
    Case d = alibi_case(12, 4, 64, 1, 700);  // decode split over the keys, a window and sinks
    d.window = 300;
    d.sinks = true;
    check(d);
}

TEST_F(Alibi, EveryCacheType) {
    Case f16 = alibi_case(40, 1, 32, 17, 130);
    f16.f16 = true;
    check(f16);
    f16.n_q = 1;
    f16.n_kv = 700;
    f16.scratch = true;
    check(f16);
    Case q8 = alibi_case(12, 4, 64, 40, 130);
    q8.q8 = true;
    check(q8);
}

TEST_F(Alibi, NonCausalPenalisesBothDirections) {
    Case c = alibi_case(3, 3, 6, 40, 130);
    c.causal = false;
    c.probs = true;
    check(c);
}

}  // namespace
}  // namespace vkllm
