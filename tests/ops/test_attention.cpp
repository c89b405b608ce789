// attention on the GPU against the CPU reference: GQA/MQA, prefill and decode (with and without
// split-K), causal / sliding-window / chunk masks, soft-capping, sinks, empty slots and
// ring-buffer slot orders, probabilities.
#include <gtest/gtest.h>

#include <utility>

#include "attention_check.h"

namespace vkllm {
namespace {

using attention_test::Attention;
using attention_test::Case;

// Every head dim with every query and key count; the groupings (8 query heads per KV head, 2, 1)
// all at head dim 64 and one at each other head dim: each head dim x grouping is a pipeline of its
// own for decode and one for prefill (a cold compile each), and the two vary independently.
TEST_F(Attention, ShapesAcrossHeadDimsAndGroupings) {
    for (auto [d, kv_heads] : {std::pair{64, 8}, {64, 4}, {64, 1}, {8, 1}, {80, 4}, {128, 8}})
        for (auto [n_q, n_kv] : {std::pair<int64_t, int64_t>{1, 1}, {3, 5}, {17, 17}, {40, 130}, {1, 700}}) {
            Case c;
            c.head_dim = d;
            c.n_head_kv = kv_heads;
            c.n_q = n_q;
            c.n_kv = n_kv;
            check(c);
        }
}

TEST_F(Attention, DecodeSplitOverKeysMatches) {
    for (int d : {64, 128})
        for (int kv_heads : {8, 2, 1})
            for (int64_t n_kv : {130, 700, 4100}) {
                Case c;
                c.head_dim = d;
                c.n_head_kv = kv_heads;
                c.n_kv = n_kv;
                c.scratch = true;
                check(c);
            }
    Case small;  // a third of the scratch: fewer, longer splits
    small.n_kv = 4100;
    small.n_head_kv = 2;
    small.scratch = true;
    small.scratch_share = 0.34;
    check(small);
    Case few;  // a few queries (speculative decoding) split too
    few.n_q = 3;
    few.n_kv = 700;
    few.n_head_kv = 2;
    few.scratch = true;
    check(few);
}

TEST_F(Attention, SlidingWindowSmallerThanThePrompt) {
    for (bool split : {false, true})
        for (auto [n_q, n_kv] : {std::pair<int64_t, int64_t>{40, 130}, {1, 700}, {17, 17}}) {
            Case c;
            c.n_head_kv = 2;
            c.n_q = n_q;
            c.n_kv = n_kv;
            c.window = 16;
            c.scratch = split && n_q == 1;
            check(c);
        }
}

TEST_F(Attention, ChunkedAndNonCausal) {
    Case c;
    c.n_q = 40;
    c.n_kv = 130;
    c.chunk = 32;
    check(c);
    c.chunk = 0;
    c.causal = false;
    c.n_q = 17;
    c.n_kv = 17;
    check(c);
}

TEST_F(Attention, SoftcapAndLargeLogitsStayStable) {
    Case c;
    c.n_head_kv = 4;
    c.n_q = 17;
    c.n_kv = 130;
    c.q_gain = 40.0f;  // logits in the hundreds: a softmax without max subtraction overflows
    check(c);
    c.softcap = 30.0f;
    check(c);
    c.n_q = 1;
    c.n_kv = 700;
    c.scratch = true;
    check(c);
}

TEST_F(Attention, SinksJoinTheDenominator) {
    for (bool split : {false, true}) {
        Case c;
        c.n_head_kv = 2;
        c.sinks = true;
        c.probs = !split;  // probabilities (with the sink's) never split
        c.n_q = split ? 1 : 40;
        c.n_kv = split ? 700 : 130;
        c.scratch = split;
        check(c);
        c.window = 8;  // gpt-oss: sliding-window layers with sinks
        check(c);
    }
}

TEST_F(Attention, EmptySlotsAndRingBufferOrder) {
    for (bool split : {false, true}) {
        Case c;
        c.n_head_kv = 4;
        c.ring = true;
        c.empty_slots = 9;
        c.n_q = split ? 1 : 17;
        c.n_kv = split ? 700 : 130;
        c.scratch = split;
        check(c);
        c.window = 64;  // a sliding-window layer's ring
        check(c);
    }
    Case all_empty;  // nothing visible: zeros
    all_empty.n_kv = 5;
    all_empty.empty_slots = 5;
    check(all_empty);
}

TEST_F(Attention, ProbabilitiesMatchAndSumToOne) {
    const Case base = [] {
        Case c;
        c.probs = true;
        c.n_head_kv = 2;
        return c;
    }();
    for (auto [n_q, n_kv] : {std::pair<int64_t, int64_t>{17, 17}, {40, 130}, {1, 700}, {1, 4100}}) {
        Case c = base;
        c.n_q = n_q;
        c.n_kv = n_kv;
        c.scratch = true;  // probabilities take the unsplit two-pass path regardless
        check(c);
        c.window = 16;
        c.sinks = true;
        c.ring = true;
        c.empty_slots = 3;
        check(c);
    }
}

TEST_F(Attention, WideHeadsAndDifferentValueWidth) {
    for (int64_t n_q : {1, 17}) {
        Case c;
        c.head_dim = 256;  // Gemma: shared memory is tight on mobile-class devices
        c.n_head_kv = 4;
        c.n_q = n_q;
        c.n_kv = 130;
        c.probs = n_q == 17;
        check(c);
        c.head_dim = 192;  // MLA: wider keys than values
        c.head_dim_v = 128;
        c.n_head_kv = 8;
        c.scratch = n_q == 1;
        check(c);
    }
}

// DeepSeek V2/V3's absorbed MLA: 16 query heads over one 576-wide key head (latent 512 + RoPE 64)
// with 512-wide values.
TEST_F(Attention, AbsorbedMlaHeads) {
    for (int64_t n_q : {1, 5}) {
        Case c;
        c.n_head = 16;
        c.n_head_kv = 1;
        c.head_dim = 576;
        c.head_dim_v = 512;
        c.n_q = n_q;
        c.n_kv = 40;
        c.scratch = n_q == 1;
        check(c);
    }
}

TEST_F(Attention, QueriesAtAnOffset) {
    Case c;
    c.n_q = 3;
    c.n_kv = 5;
    c.q_offset = 13;
    check(c);
}

// An fp16 cache: the same kernel reads K and V through 16-bit storage. Vector and scalar key
// loads (head_dim a multiple of 4 or not), GQA, prefill and split decode, rings with empty
// (NaN-filled) slots, windows, sinks and probabilities, MLA's wide keys. (Head dims and groupings
// are spread over each other as in ShapesAcrossHeadDimsAndGroupings.)
TEST_F(Attention, Fp16AndQ8CachesMatchTheReferenceOnTheRoundedValues) {
    for (auto [d, kv_heads] : {std::pair{6, 8}, {6, 1}, {64, 8}, {80, 1}})
        for (auto [n_q, n_kv] : {std::pair<int64_t, int64_t>{1, 1}, {17, 17}, {40, 130}, {1, 700}}) {
            Case c;
            c.f16 = true;
            c.head_dim = d;
            c.n_head_kv = kv_heads;
            c.n_q = n_q;
            c.n_kv = n_kv;
            c.scratch = n_q == 1;
            check(c);
        }
    Case ring;
    ring.f16 = true;
    ring.n_head_kv = 4;
    ring.ring = true;
    ring.empty_slots = 9;
    ring.n_kv = 130;
    ring.n_q = 17;
    ring.window = 64;
    ring.sinks = true;
    ring.probs = true;
    check(ring);
    Case small;  // gpt-oss-like: narrow heads, GQA, sinks, a whole prompt
    small.f16 = true;
    small.n_head = 4;
    small.n_head_kv = 2;
    small.head_dim = 16;
    small.n_q = 45;
    small.n_kv = 45;
    small.sinks = true;
    for (bool probs : {false, true}) {
        small.probs = probs;
        check(small);
    }
    // The same kernel over a Q8_0 cache (K and V rows of whole 32-value blocks): a block per head,
    // and heads that straddle blocks.
    for (int d : {32, 80})
        for (auto [n_q, n_kv] : {std::pair<int64_t, int64_t>{1, 1}, {17, 17}, {40, 130}, {1, 700}}) {
            Case c;
            c.q8 = true;
            c.head_dim = d;
            c.n_head_kv = 2;
            c.n_q = n_q;
            c.n_kv = n_kv;
            c.scratch = n_q == 1;
            check(c);
        }
    ring.f16 = false;
    ring.q8 = true;
    check(ring);
    Case mla;
    mla.f16 = true;
    mla.n_head = 16;
    mla.n_head_kv = 1;
    mla.head_dim = 576;
    mla.head_dim_v = 512;
    mla.n_kv = 40;
    mla.scratch = true;
    check(mla);
}

TEST_F(Attention, BadParametersAreClearErrors) {
    gpu::Buffer b(ctx(), 4096, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    AttentionParams p;
    p.n_head = 6;
    p.n_head_kv = 4;  // not a divisor
    p.head_dim = 8;
    auto attend = [&](int64_t n_kv, int64_t slots, int64_t q_offset = 0) {
        const int64_t row = int64_t(p.n_head_kv) * p.head_dim;
        const ops::KvView cache{&b, slots, row, KvCacheType::F32};
        ops::attention(s, ops::f32_rows(b, 1, int64_t(p.n_head) * p.head_dim, uint64_t(q_offset)), ops::i32_vector(b, 1),
                       cache, cache, ops::i32_vector(b, n_kv), ops::f32_rows(b, 1, int64_t(p.n_head) * p.head_dim), p);
    };
    EXPECT_THROW(attend(1, 1), ops::ShapeError);
    p.n_head_kv = 2;
    EXPECT_THROW(attend(1000, 1000), ops::ShapeError);  // k too small
    EXPECT_THROW(attend(8, 4), ops::ShapeError);        // more keys than slots
    EXPECT_THROW(attend(1, 1, 1100), ops::ShapeError);  // q past the buffer's end
    s.submit_and_wait();
}

}  // namespace
}  // namespace vkllm
