// The logit lens's softmax and top-k on the GPU (ops::lens_top_k) against the CPU reference
// (cpu::lens_top_k): odd vocabulary sizes and k, k larger than the vocabulary, more tokens than
// a workgroup has invocations times k, tied logits (id order), -inf logits (probability 0, never
// listed) and offsets into every buffer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "cpu/ref_lens.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "op_test_data.h"
#include "ops/lens_ops.h"
#include "test_support.h"

namespace vkllm {
namespace {

float float_of(int32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

class LensTopK : public test::GpuTest {
protected:
    void check(int n_rows, int n_vocab, int k, uint32_t seed) {
        SCOPED_TRACE("rows " + std::to_string(n_rows) + " vocabulary " + std::to_string(n_vocab) + " k " +
                     std::to_string(k));
        std::mt19937 rng(seed);
        std::uniform_real_distribution<float> u(0.0f, 1.0f);
        // Logits in steps of 1/8 (ties, and distinct logits far enough apart that their float
        // probabilities differ too), a few -inf.
        std::vector<float> logits(size_t(n_rows) * size_t(n_vocab));
        for (float& x : logits)
            x = u(rng) < 0.05f ? -std::numeric_limits<float>::infinity() : std::floor(u(rng) * 64.0f) / 8.0f - 4.0f;
        for (int r = 0; r < n_rows; ++r) logits[size_t(r) * size_t(n_vocab)] = 1.0f;  // no row all -inf
        const auto want = cpu::lens_top_k(logits.data(), n_rows, n_vocab, k);

        const uint64_t lo = 3, io = 5, to = 7;  // not multiples of the binding alignment
        std::vector<float> lp(lo, 0.0f);
        lp.insert(lp.end(), logits.begin(), logits.end());
        std::vector<int32_t> ids(io + size_t(std::max(n_rows, n_vocab)));
        std::iota(ids.begin() + std::ptrdiff_t(io), ids.end(), 0);
        const size_t top_n = size_t(n_rows) * size_t(k) * 2;
        const gpu::Buffer lb = test::upload(ctx(), lp), ib = test::upload(ctx(), ids);
        const gpu::Buffer tb = test::upload(ctx(), std::vector<int32_t>(to + top_n, 0));
        gpu::Stream s(ctx());
        s.begin();
        ops::lens_top_k(s, ops::f32_rows(lb, n_rows, n_vocab, lo), ops::i32_vector(ib, int64_t(ids.size() - io), io),
                        ops::i32_rows(tb, n_rows, int64_t(k) * 2, to), k);
        s.submit_and_wait();
        const auto top = test::download<int32_t>(tb, to + top_n);
        for (int r = 0; r < n_rows; ++r)
            for (int i = 0; i < k; ++i) {
                const size_t g = to + (size_t(r) * size_t(k) + size_t(i)) * 2;
                const cpu::LensPick& w = want[size_t(r) * size_t(k) + size_t(i)];
                ASSERT_EQ(top[g + 1], w.id) << "row " << r << " rank " << i;
                ASSERT_NEAR(float_of(top[g]), w.p, 1e-6 + 1e-5 * w.p) << "row " << r << " rank " << i;
            }
    }
};

TEST_F(LensTopK, MatchesReference) {
    check(1, 1, 1, 1);
    check(3, 6, 9, 2);      // k above the vocabulary: the row ends in (-1, 0)
    check(5, 37, 5, 3);
    check(2, 1501, 16, 4);  // 23 tokens per invocation, the largest k
    check(7, 4099, 3, 5);
}

TEST_F(LensTopK, RejectsBadRequests) {
    gpu::Buffer b(ctx(), 256, gpu::Memory::Device), c(ctx(), 256, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    EXPECT_THROW(ops::lens_top_k(s, ops::f32_rows(b, 2, 8), ops::i32_vector(c, 8), ops::i32_rows(c, 2, 34), 17),
                 ops::ShapeError);  // k too large
    EXPECT_THROW(ops::lens_top_k(s, ops::f32_rows(b, 2, 8), ops::i32_vector(c, 7), ops::i32_rows(c, 2, 4), 2),
                 ops::ShapeError);  // ids shorter than the vocabulary
    EXPECT_THROW(ops::lens_top_k(s, ops::f32_rows(b, 2, 8), ops::i32_vector(c, 8), ops::i32_rows(c, 2, 3), 2),
                 ops::ShapeError);  // two pairs need 4 values
    EXPECT_THROW(ops::lens_top_k(s, ops::f32_rows(b, 2, 8), ops::f32_vector(c, 8), ops::i32_rows(c, 2, 4), 2),
                 ops::ShapeError);  // float ids
    s.submit_and_wait();
}

}  // namespace
}  // namespace vkllm
