// attention on the GPU against the CPU reference: GQA/MQA, prefill and decode (with and without
// split-K), causal / sliding-window / chunk masks, soft-capping, sinks, empty slots and
// ring-buffer slot orders, probabilities.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cpu/ref_ops.h"
#include "gguf/quant.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/ops.h"
#include "op_test_data.h"
#include "test_support.h"

namespace vkllm {
namespace {

struct Case {
    int n_head = 8, n_head_kv = 8, head_dim = 64, head_dim_v = 0;
    int64_t n_q = 1, n_kv = 1;  // n_kv: cache slots
    bool causal = true;
    int window = 0, chunk = 0;
    float softcap = 0.0f;
    bool sinks = false, probs = false, scratch = false;
    bool ring = false;        // slots hold positions in ring-buffer order (pos % n_kv), not sorted
    int empty_slots = 0;      // slots marked -1, their K/V filled with NaN
    double scratch_share = 1.0;  // of attention_scratch_bytes(): a smaller scratch splits less
    float q_gain = 1.0f;      // scales q: large logits test the softmax's stability
    uint64_t q_offset = 0;
    bool f16 = false;         // an fp16 cache: K and V stored as fp16 (the reference sees the rounded values)
    bool q8 = false;          // a Q8_0 cache: K and V in 32-value blocks (likewise)

    std::string name() const {
        std::string s = "h" + std::to_string(n_head) + "/" + std::to_string(n_head_kv) + " d" +
                        std::to_string(head_dim) + (head_dim_v ? "/" + std::to_string(head_dim_v) : "") + " q" +
                        std::to_string(n_q) + " kv" + std::to_string(n_kv);
        if (!causal) s += " noncausal";
        if (window) s += " window" + std::to_string(window);
        if (chunk) s += " chunk" + std::to_string(chunk);
        if (softcap > 0) s += " softcap";
        if (sinks) s += " sinks";
        if (probs) s += " probs";
        if (scratch) s += " split";
        if (ring) s += " ring";
        if (empty_slots) s += " empty" + std::to_string(empty_slots);
        if (f16) s += " f16";
        if (q8) s += " q8_0";
        return s;
    }
};

// x quantised as a Q8_0 cache holds it (9 words per 32 values: the scale, then 32 int8s), and x
// replaced by the values it decodes to. A block holding NaN gets a NaN scale (an empty slot).
std::vector<uint32_t> q8_blocks(std::vector<float>& x) {
    std::vector<uint32_t> out;
    std::vector<float> r(32);
    for (size_t b = 0; b < x.size() / 32; ++b) {
        float* blk = &x[b * 32];
        cpu::round_activations(blk, r.data(), 32, 32);
        float amax = 0.0f;
        for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(blk[i]));
        const float d = std::isnan(blk[0]) ? blk[0] : gguf::fp16_to_fp32(gguf::fp32_to_fp16(amax / 127.0f));
        uint32_t dw;
        std::memcpy(&dw, &d, 4);
        out.push_back(dw);
        for (int w = 0; w < 8; ++w) {
            uint32_t word = 0;
            for (int i = 0; i < 4; ++i) {
                const int q = d > 0 ? int(std::lrint(r[size_t(4 * w + i)] / d)) : 0;
                word |= uint32_t(uint8_t(int8_t(q))) << (8 * i);
            }
            out.push_back(word);
        }
        if (std::isnan(d)) continue;
        std::copy(r.begin(), r.end(), blk);
    }
    return out;
}

class Attention : public test::GpuTest {
protected:
    template <class T>
    gpu::Buffer upload(const std::vector<T>& v) {
        return test::upload(ctx(), v);
    }

    void check(const Case& c) {
        SCOPED_TRACE(c.name());
        if (c.f16 && !ctx().caps().storage_16bit) GTEST_SKIP() << "no 16-bit storage on this device: no f16 cache";
        const int dv = c.head_dim_v ? c.head_dim_v : c.head_dim;
        const size_t q_size = size_t(c.n_q * c.n_head * c.head_dim);
        const size_t k_row = size_t(c.n_head_kv * c.head_dim), v_row = size_t(c.n_head_kv * dv);
        std::mt19937 rng(uint32_t(c.n_q * 1000 + c.n_kv + c.head_dim));

        // Positions: the cache holds the last n_kv positions of a sequence; the queries are its
        // last n_q tokens (their keys already written, as the forward pass does).
        const int32_t first = c.ring ? 37 : 0;  // a ring has wrapped: slot = pos % n_kv
        std::vector<int32_t> kv_pos(size_t(c.n_kv));
        for (int64_t j = 0; j < c.n_kv; ++j) {
            const int32_t pos = first + int32_t(j);
            kv_pos[size_t(c.ring ? pos % c.n_kv : j)] = pos;
        }
        const int32_t last = first + int32_t(c.n_kv) - 1;
        std::vector<int32_t> q_pos(size_t(c.n_q));
        for (int64_t i = 0; i < c.n_q; ++i) q_pos[size_t(i)] = last - int32_t(c.n_q - 1 - i);
        std::vector<size_t> slots(size_t(c.n_kv));
        std::iota(slots.begin(), slots.end(), 0);
        std::shuffle(slots.begin(), slots.end(), rng);
        for (int e = 0; e < c.empty_slots; ++e) kv_pos[slots[size_t(e)]] = -1;

        auto q = test::random_floats(size_t(c.q_offset) + q_size, 1 + uint32_t(c.n_q), -c.q_gain, c.q_gain);
        auto k = test::random_floats(size_t(c.n_kv) * k_row, 2 + uint32_t(c.n_kv));
        auto v = test::random_floats(size_t(c.n_kv) * v_row, 3 + uint32_t(c.n_kv));
        auto sinks = test::random_floats(size_t(c.n_head), 4, -1.0f, 3.0f);
        const float nan = std::numeric_limits<float>::quiet_NaN();
        for (int64_t j = 0; j < c.n_kv; ++j)
            if (kv_pos[size_t(j)] < 0) {  // an empty slot may hold anything
                std::fill_n(k.begin() + long(size_t(j) * k_row), k_row, nan);
                std::fill_n(v.begin() + long(size_t(j) * v_row), v_row, nan);
            }

        std::vector<uint16_t> k16, v16;  // what an f16 cache holds; the reference reads the same values
        if (c.f16) {
            for (float& x : k) k16.push_back(gguf::fp32_to_fp16(x)), x = gguf::fp16_to_fp32(k16.back());
            for (float& x : v) v16.push_back(gguf::fp32_to_fp16(x)), x = gguf::fp16_to_fp32(v16.back());
        }
        std::vector<uint32_t> k8, v8;  // and a Q8_0 cache (empty slots: NaN scales)
        if (c.q8) {
            k8 = q8_blocks(k);
            v8 = q8_blocks(v);
        }

        // Reference over the occupied slots, probabilities scattered back to slot order.
        std::vector<float> kc, vc;
        std::vector<int32_t> pc;
        std::vector<size_t> occupied;
        for (int64_t j = 0; j < c.n_kv; ++j) {
            if (kv_pos[size_t(j)] < 0) continue;
            occupied.push_back(size_t(j));
            pc.push_back(kv_pos[size_t(j)]);
            kc.insert(kc.end(), k.begin() + long(size_t(j) * k_row), k.begin() + long(size_t(j + 1) * k_row));
            vc.insert(vc.end(), v.begin() + long(size_t(j) * v_row), v.begin() + long(size_t(j + 1) * v_row));
        }
        AttentionParams rp;
        rp.n_head = c.n_head;
        rp.n_head_kv = c.n_head_kv;
        rp.head_dim = c.head_dim;
        rp.head_dim_v = dv;
        rp.scale = 1.0f / std::sqrt(float(c.head_dim));
        rp.causal = c.causal;
        rp.window = c.window;
        rp.chunk = c.chunk;
        rp.softcap = c.softcap;
        const int64_t n_occ = int64_t(occupied.size());
        std::vector<float> ref_out(size_t(c.n_q * c.n_head * dv)), ref_probs_c(size_t(c.n_q * c.n_head * n_occ));
        cpu::attention(q.data() + c.q_offset, kc.data(), vc.data(), q_pos.data(), pc.data(), ref_out.data(),
                       ref_probs_c.data(), c.n_q, n_occ, rp, c.sinks ? sinks.data() : nullptr);
        std::vector<float> ref_probs(size_t(c.n_q * c.n_head * c.n_kv), 0.0f);
        for (int64_t row = 0; row < c.n_q * c.n_head; ++row)
            for (int64_t jj = 0; jj < n_occ; ++jj)
                ref_probs[size_t(row * c.n_kv) + occupied[size_t(jj)]] = ref_probs_c[size_t(row * n_occ + jj)];

        AttentionParams p = rp;
        p.head_dim_v = c.head_dim_v;  // 0: head_dim, as the case may leave it
        const KvCacheType cache = c.f16 ? KvCacheType::F16 : c.q8 ? KvCacheType::Q8_0 : KvCacheType::F32;
        gpu::Buffer kb = c.f16 ? upload(k16) : c.q8 ? upload(k8) : upload(k);
        gpu::Buffer vb = c.f16 ? upload(v16) : c.q8 ? upload(v8) : upload(v);
        gpu::Buffer qb = upload(q), qpb = upload(q_pos), kpb = upload(kv_pos);
        gpu::Buffer sb = upload(sinks);
        gpu::Buffer ob(ctx(), ref_out.size() * 4, gpu::Memory::Device);
        // With sinks, each row's sink probability follows the rows.
        const size_t sink_rows = c.sinks ? size_t(c.n_q * c.n_head) : 0;
        gpu::Buffer pb(ctx(), std::max<size_t>(ref_probs.size() + sink_rows, 1) * 4, gpu::Memory::Device);
        const uint64_t scratch_bytes =
            c.scratch ? uint64_t(double(ops::attention_scratch_bytes(ctx(), c.n_q, c.n_kv, p)) * c.scratch_share) : 0;
        if (c.scratch && c.n_kv >= 256) {
            EXPECT_GT(scratch_bytes, 0u) << "this case is meant to split";
        }
        gpu::Buffer scratch(ctx(), std::max<uint64_t>(scratch_bytes, 4), gpu::Memory::Device);
        gpu::Stream s(ctx());
        s.begin();
        const int64_t kv_heads = int64_t(c.n_head_kv);
        ops::attention(s, ops::f32_rows(qb, c.n_q, int64_t(c.n_head) * c.head_dim, uint64_t(c.q_offset)),
                       ops::i32_vector(qpb, c.n_q), ops::KvView{&kb, c.n_kv, kv_heads * c.head_dim, cache},
                       ops::KvView{&vb, c.n_kv, kv_heads * dv, cache}, ops::i32_vector(kpb, c.n_kv),
                       ops::f32_rows(ob, c.n_q, int64_t(c.n_head) * dv), p, c.sinks ? &sb : nullptr,
                       c.probs ? &pb : nullptr, scratch_bytes ? &scratch : nullptr);
        s.submit_and_wait();

        const auto out = test::download<float>(ob, ref_out.size());
        EXPECT_LT(test::nmse(out, ref_out), 1e-9);
        EXPECT_LT(test::max_abs_diff(out, ref_out), 1e-4);
        if (!c.probs) return;
        const auto all_probs = test::download<float>(pb, ref_probs.size() + sink_rows);
        const std::vector<float> probs(all_probs.begin(), all_probs.begin() + long(ref_probs.size()));
        EXPECT_LT(test::nmse(probs, ref_probs), 1e-9);
        EXPECT_LT(test::max_abs_diff(probs, ref_probs), 1e-5);
        for (int64_t row = 0; row < c.n_q * c.n_head; ++row) {
            double sum = 0, ref_sum = 0;
            for (int64_t j = 0; j < c.n_kv; ++j) {
                sum += probs[size_t(row * c.n_kv + j)];
                ref_sum += ref_probs[size_t(row * c.n_kv + j)];
                if (kv_pos[size_t(j)] < 0) {
                    ASSERT_EQ(probs[size_t(row * c.n_kv + j)], 0.0f) << "empty slot " << j;
                }
            }
            // 1 when some key is visible and there is no sink; less with a sink; 0 when nothing is visible.
            EXPECT_NEAR(sum, ref_sum, 1e-5) << "row " << row;
            if (!c.sinks && ref_sum > 0) {
                EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << row;
            }
            // The sink takes what the keys leave of the reference's softmax.
            if (c.sinks) {
                const float sink = all_probs[ref_probs.size() + size_t(row)];
                EXPECT_NEAR(sink, 1.0 - ref_sum, 1e-5) << "row " << row;
                EXPECT_NEAR(sum + sink, 1.0, 1e-5) << "row " << row;
            }
        }
    }
};

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
