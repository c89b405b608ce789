// Top keys and thumbnails of attention maps (ops::attention_detail) against the CPU reference
// (cpu::attention_top_k, cpu::attention_thumbnails): odd row, head and key counts, more keys
// than a workgroup has invocations times k (the per-invocation lists and their merge), many
// equal probabilities (the order of ties), ring-ordered, empty and masked slots, offsets into
// every buffer, and a map pooled in two dispatches into the same cells.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cpu/ref_probe_detail.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "op_test_data.h"
#include "ops/probe_ops.h"
#include "test_support.h"

namespace vkllm {
namespace {

float float_of(int32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

class AttentionDetailOp : public test::GpuTest {
protected:
    void check(int n_q, int n_head, int n_kv, int k, int cells, uint32_t seed) {
        SCOPED_TRACE("n_q " + std::to_string(n_q) + " n_head " + std::to_string(n_head) + " n_kv " +
                     std::to_string(n_kv) + " k " + std::to_string(k) + " cells " + std::to_string(cells));
        std::mt19937 rng(seed);
        std::uniform_real_distribution<float> u(0.0f, 1.0f);
        // A ring: position p in slot p % n_kv, a few slots empty.
        const int newest = n_kv + n_q + 5;
        std::vector<int32_t> kv_pos(size_t(n_kv), 0);
        for (int j = 0; j < n_kv; ++j) {
            const int p = newest - ((newest - j) % n_kv + n_kv) % n_kv;
            kv_pos[size_t(j)] = u(rng) < 0.1f ? -1 : p;
        }
        std::vector<int32_t> q_pos(static_cast<size_t>(n_q));
        for (int q = 0; q < n_q; ++q) q_pos[size_t(q)] = newest - (n_q - 1 - q);
        // Probabilities in steps of 1/64 (many ties), some masked to 0.
        const size_t rows = size_t(n_q) * size_t(n_head);
        std::vector<float> probs(rows * size_t(n_kv), 0.0f);
        for (size_t r = 0; r < rows; ++r)
            for (int j = 0; j < n_kv; ++j)
                if (kv_pos[size_t(j)] >= 0 && kv_pos[size_t(j)] <= q_pos[r / size_t(n_head)] && u(rng) > 0.2f)
                    probs[r * size_t(n_kv) + size_t(j)] = std::floor(u(rng) * 64.0f) / 64.0f;

        // The same map on the CPU: keys at positions 0..newest.
        AttentionMap m;
        m.n_head = n_head;
        m.query_pos = q_pos;
        for (int p = 0; p <= newest; ++p) m.key_pos.push_back(p);
        m.probs.assign(size_t(n_head) * size_t(n_q) * size_t(newest + 1), 0.0f);
        for (int q = 0; q < n_q; ++q)
            for (int h = 0; h < n_head; ++h)
                for (int j = 0; j < n_kv; ++j)
                    if (kv_pos[size_t(j)] >= 0)
                        m.probs[(size_t(h) * size_t(n_q) + size_t(q)) * size_t(newest + 1) + size_t(kv_pos[size_t(j)])] =
                            probs[(size_t(q) * size_t(n_head) + size_t(h)) * size_t(n_kv) + size_t(j)];

        const auto thumbs = cpu::attention_thumbnails(m, cells);
        const int cell = thumbs[0].cell;
        const uint64_t po = 3, qo = 5, to = 7, mo = 11;  // not multiples of the binding alignment
        std::vector<float> pp(po, 0.0f);
        pp.insert(pp.end(), probs.begin(), probs.end());
        std::vector<int32_t> qq(qo, 0);
        qq.insert(qq.end(), q_pos.begin(), q_pos.end());
        const gpu::Buffer pb = test::upload(ctx(), pp), qb = test::upload(ctx(), qq), kb = test::upload(ctx(), kv_pos);
        const size_t top_n = rows * size_t(k) * 2, thumb_n = size_t(n_head) * size_t(cells) * size_t(cells);
        const gpu::Buffer tb = test::upload(ctx(), std::vector<int32_t>(to + top_n, 0));
        const gpu::Buffer mb = test::upload(ctx(), std::vector<int32_t>(mo + thumb_n, 0));
        gpu::Stream s(ctx());
        s.begin();
        // Rows in two blocks, pooled into the same cells.
        const int split = n_q / 2;
        for (auto [q0, nq] : {std::pair{0, split}, std::pair{split, n_q - split}}) {
            if (nq == 0) continue;
            ops::AttentionDetailArgs a;
            a.probs = ops::f32_rows(pb, nq, int64_t(n_head) * n_kv, po + uint64_t(q0) * uint64_t(n_head) * uint64_t(n_kv));
            a.q_pos = ops::i32_vector(qb, nq, qo + uint64_t(q0));
            a.kv_pos = ops::i32_vector(kb, n_kv);
            a.n_head = n_head;
            a.top_k = k;
            a.top = ops::i32_rows(tb, nq, int64_t(n_head) * k * 2, to + uint64_t(q0) * uint64_t(n_head) * uint64_t(k) * 2);
            a.cells = cells;
            a.cell = cell;
            a.query_cell0 = q_pos[0] / cell;
            a.thumb = ops::i32_rows(mb, int64_t(n_head) * cells, cells, mo);
            ops::attention_detail(s, a);
            s.barrier("the first block's cells are written before the second max-combines into them");
        }
        s.submit_and_wait();
        const auto top = test::download<int32_t>(tb, to + top_n);
        const auto thumb = test::download<int32_t>(mb, mo + thumb_n);

        const auto want = cpu::attention_top_k(m, k);
        for (int h = 0; h < n_head; ++h)
            for (int q = 0; q < n_q; ++q)
                for (int i = 0; i < k; ++i) {
                    const size_t g = to + ((size_t(q) * size_t(n_head) + size_t(h)) * size_t(k) + size_t(i)) * 2;
                    const size_t w = size_t(q) * size_t(k) + size_t(i);
                    ASSERT_EQ(float_of(top[g]), want[size_t(h)].probs[w]) << "head " << h << " row " << q << " rank " << i;
                    ASSERT_EQ(top[g + 1], want[size_t(h)].key_pos[w]) << "head " << h << " row " << q << " rank " << i;
                }
        for (int h = 0; h < n_head; ++h) {
            const AttentionThumbnail& t = thumbs[size_t(h)];
            ASSERT_LE(t.rows, cells);
            ASSERT_LE(t.cols, cells);
            for (int r = 0; r < cells; ++r)
                for (int c = 0; c < cells; ++c) {
                    const float want_v = r < t.rows && c < t.cols ? t.at(r, c) : 0.0f;
                    ASSERT_EQ(float_of(thumb[mo + (size_t(h) * size_t(cells) + size_t(r)) * size_t(cells) + size_t(c)]),
                              want_v)
                        << "head " << h << " cell " << r << "," << c;
                }
        }
    }
};

TEST_F(AttentionDetailOp, MatchesReference) {
    check(1, 1, 1, 1, 1, 1);
    check(7, 3, 37, 5, 4, 2);
    check(5, 2, 1500, 16, 13, 3);  // 23 keys per invocation, the largest k
    check(3, 5, 301, 7, 256, 4);   // the largest thumbnail: one position per cell
}

TEST_F(AttentionDetailOp, RejectsBadRequests) {
    gpu::Buffer b(ctx(), 256, gpu::Memory::Device), c(ctx(), 256, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    ops::AttentionDetailArgs a;
    a.probs = ops::f32_rows(b, 1, 4);
    a.q_pos = ops::i32_vector(b, 1);
    a.kv_pos = ops::i32_vector(b, 4);
    a.n_head = 1;
    EXPECT_THROW(ops::attention_detail(s, a), ops::ShapeError);  // neither output
    a.top_k = 17;
    a.top = ops::i32_rows(c, 1, 34);
    EXPECT_THROW(ops::attention_detail(s, a), ops::ShapeError);  // k too large
    a.top_k = 2;
    a.top = ops::i32_rows(c, 1, 2);
    EXPECT_THROW(ops::attention_detail(s, a), ops::ShapeError);  // two pairs need 4 values
    a.top = ops::i32_rows(b, 1, 4);
    EXPECT_THROW(ops::attention_detail(s, a), ops::ShapeError);  // top over the probabilities
    a.top = ops::i32_rows(c, 1, 4);
    a.cells = 3;
    a.cell = 0;
    a.thumb = ops::i32_rows(c, 3, 3, 8);
    EXPECT_THROW(ops::attention_detail(s, a), ops::ShapeError);  // cell 0
    a.cell = 2;
    EXPECT_THROW(ops::attention_detail(s, a), ops::ShapeError);  // thumb shares top's buffer
    a.thumb = ops::f32_rows(b, 3, 3);
    EXPECT_THROW(ops::attention_detail(s, a), ops::ShapeError);  // f32 cells
    s.submit_and_wait();
}

}  // namespace
}  // namespace vkllm
