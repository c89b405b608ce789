// Attention summaries (ops::attention_summary) against the CPU reference
// (cpu::attention_row_stats): odd row counts and key counts, ring-ordered and empty slots,
// masked keys, sinks, and an offset into every buffer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "cpu/ref_attention_summary.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/probe_ops.h"
#include "test_support.h"

namespace vkllm {
namespace {

class AttentionSummaryOp : public test::GpuTest {
protected:
    void check(int n_q, int n_head, int n_kv, bool sinks, uint32_t seed) {
        SCOPED_TRACE("n_q " + std::to_string(n_q) + " n_head " + std::to_string(n_head) + " n_kv " +
                     std::to_string(n_kv) + (sinks ? " sinks" : ""));
        std::mt19937 rng(seed);
        std::uniform_real_distribution<float> u(0.0f, 1.0f);
        // Slots of a ring: position p in slot p % n_kv, the oldest positions evicted, and a few
        // empty slots (-1).
        const int newest = n_kv + n_q + 5;
        std::vector<int32_t> kv_pos(static_cast<size_t>(n_kv));
        for (int k = 0; k < n_kv; ++k) {
            int p = newest - ((newest - k) % n_kv + n_kv) % n_kv;  // p % n_kv == k, p <= newest
            kv_pos[size_t(k)] = u(rng) < 0.1f ? -1 : p;
        }
        if (n_kv > 2) kv_pos[size_t((0 + n_kv) % n_kv)] = 0;  // position 0 still held somewhere
        std::vector<int32_t> q_pos(static_cast<size_t>(n_q));
        for (int q = 0; q < n_q; ++q) q_pos[size_t(q)] = newest - (n_q - 1 - q);
        const size_t rows = size_t(n_q) * size_t(n_head);
        std::vector<float> probs(rows * size_t(n_kv) + (sinks ? rows : 0), 0.0f);
        for (size_t r = 0; r < rows; ++r) {
            const int qp = q_pos[r / size_t(n_head)];
            float* row = &probs[r * size_t(n_kv)];
            double sum = 0;
            for (int k = 0; k < n_kv; ++k) {
                const int kp = kv_pos[size_t(k)];
                if (kp < 0 || kp > qp || u(rng) < 0.2f) continue;  // empty, future or masked
                row[k] = std::exp(6.0f * u(rng));
                sum += row[k];
            }
            const float sink = sinks ? std::exp(6.0f * u(rng)) : 0.0f;
            sum += sink;
            for (int k = 0; k < n_kv; ++k) row[k] = float(row[k] / sum);
            if (sinks) probs[rows * size_t(n_kv) + r] = float(sink / sum);
        }
        // Offsets that are not multiples of the binding alignment.
        const uint64_t po = 3, qo = 5, so = 7;
        gpu::Buffer pb(ctx(), (po + probs.size()) * 4, gpu::Memory::Device);
        gpu::Buffer qb(ctx(), (qo + q_pos.size()) * 4, gpu::Memory::Device);
        gpu::Buffer kb(ctx(), kv_pos.size() * 4, gpu::Memory::Device);
        gpu::Buffer sb(ctx(), (so + rows * ops::kAttentionStats) * 4, gpu::Memory::Device);
        std::vector<float> pp(po, 0.0f);
        pp.insert(pp.end(), probs.begin(), probs.end());
        pb.upload(pp.data(), pp.size() * 4);
        std::vector<int32_t> qq(qo, 0);
        qq.insert(qq.end(), q_pos.begin(), q_pos.end());
        qb.upload(qq.data(), qq.size() * 4);
        kb.upload(kv_pos.data(), kv_pos.size() * 4);
        gpu::Stream s(ctx());
        s.begin();
        ops::attention_summary(s, ops::f32_rows(pb, n_q, int64_t(n_head) * n_kv, po), sinks, ops::i32_vector(qb, n_q, qo),
                               ops::i32_vector(kb, n_kv), ops::f32_rows(sb, n_q, int64_t(n_head) * ops::kAttentionStats, so),
                               n_head);
        s.submit_and_wait();
        std::vector<float> got(so + rows * ops::kAttentionStats);
        sb.download(got.data(), got.size() * 4);
        for (size_t r = 0; r < rows; ++r) {
            const float sink = sinks ? probs[rows * size_t(n_kv) + r] : 0.0f;
            const cpu::AttentionRowStats ref = cpu::attention_row_stats(
                &probs[r * size_t(n_kv)], kv_pos.data(), n_kv, q_pos[r / size_t(n_head)], sink);
            const float* g = &got[so + r * ops::kAttentionStats];
            EXPECT_NEAR(g[0], ref.entropy, 1e-4 * (1 + ref.entropy)) << "row " << r;
            EXPECT_NEAR(g[1], ref.sink_mass, 1e-5) << "row " << r;
            EXPECT_NEAR(g[2], ref.mean_distance, 1e-4 * (1 + ref.mean_distance)) << "row " << r;
            EXPECT_NEAR(g[3], ref.max_prob, 1e-6) << "row " << r;
        }
    }
};

TEST_F(AttentionSummaryOp, MatchesReference) {
    check(1, 1, 1, false, 1);
    check(7, 3, 37, false, 2);
    check(5, 4, 300, true, 3);
    check(3, 2, 2100, false, 4);  // the wide workgroup
    check(17, 8, 129, true, 5);
}

TEST_F(AttentionSummaryOp, OneKeyIsCertain) {
    // One visible key at position 0: entropy 0, all the mass on the first key.
    gpu::Buffer pb(ctx(), 2 * 4, gpu::Memory::Device), qb(ctx(), 4, gpu::Memory::Device),
        kb(ctx(), 2 * 4, gpu::Memory::Device), sb(ctx(), 4 * 4, gpu::Memory::Device);
    const float p[2] = {1.0f, 0.0f};
    const int32_t q[1] = {0}, k[2] = {0, -1};
    pb.upload(p, sizeof p);
    qb.upload(q, sizeof q);
    kb.upload(k, sizeof k);
    gpu::Stream s(ctx());
    s.begin();
    ops::attention_summary(s, ops::f32_rows(pb, 1, 2), false, ops::i32_vector(qb, 1), ops::i32_vector(kb, 2),
                           ops::f32_rows(sb, 1, ops::kAttentionStats), 1);
    s.submit_and_wait();
    float got[4];
    sb.download(got, sizeof got);
    EXPECT_EQ(got[0], 0.0f);
    EXPECT_EQ(got[1], 1.0f);
    EXPECT_EQ(got[2], 0.0f);
    EXPECT_EQ(got[3], 1.0f);
}

TEST_F(AttentionSummaryOp, RejectsBadShapes) {
    gpu::Buffer b(ctx(), 64, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    EXPECT_THROW(ops::attention_summary(s, ops::f32_rows(b, 1, 0), false, ops::i32_vector(b, 1), ops::i32_vector(b, 4),
                                        ops::f32_rows(b, 1, 0), 0),
                 ops::ShapeError);
    EXPECT_THROW(ops::attention_summary(s, ops::f32_rows(b, 4, 16), false, ops::i32_vector(b, 4), ops::i32_vector(b, 4),
                                        ops::f32_rows(b, 4, 16), 4),
                 ops::ShapeError);  // b too small
    EXPECT_THROW(ops::attention_summary(s, ops::f32_rows(b, 1, 4), false, ops::i32_vector(b, 1), ops::i32_vector(b, 4),
                                        ops::f32_rows(b, 1, 8), 1),
                 ops::ShapeError);  // stats of two heads for one
    EXPECT_THROW(ops::attention_summary(s, ops::f32_rows(b, 1, 4), false, ops::f32_rows(b, 1, 1), ops::i32_vector(b, 4),
                                        ops::f32_rows(b, 1, 4), 1),
                 ops::ShapeError);  // f32 positions
    s.submit_and_wait();
}

}  // namespace
}  // namespace vkllm
