// Row argmax on the GPU against the CPU reference.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "cpu/ref_ops.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/ops.h"
#include "test_support.h"

namespace vkllm {
namespace {

class Argmax : public test::GpuTest {
protected:
    std::vector<int32_t> run(const std::vector<float>& x, uint64_t offset, int64_t rows, int64_t n) {
        gpu::Buffer xb(ctx(), x.size() * 4, gpu::Memory::Device), ob(ctx(), size_t(rows) * 4, gpu::Memory::Device);
        xb.upload(x.data(), x.size() * 4);
        gpu::Stream s(ctx());
        s.begin();
        ops::argmax(s, ops::f32_rows(xb, rows, n, offset), ops::i32_vector(ob, rows));
        s.submit_and_wait();
        std::vector<int32_t> out(static_cast<size_t>(rows));
        ob.download(out.data(), out.size() * 4);
        return out;
    }
};

TEST_F(Argmax, MatchesReferenceOnRandomRows) {
    const int64_t shapes[][2] = {{1, 1}, {3, 7}, {17, 300}, {2, 32000}, {1, 151936}};
    for (auto [rows, n] : shapes) {
        const uint64_t offset = 3;
        auto x = test::random_floats(size_t(offset + rows * n), uint32_t(n), -10.0f, 10.0f);
        auto got = run(x, offset, rows, n);
        for (int64_t r = 0; r < rows; ++r)
            EXPECT_EQ(got[size_t(r)], cpu::argmax(x.data() + offset + r * n, n)) << rows << "x" << n << " row " << r;
    }
}

TEST_F(Argmax, TiesPickTheLowestIndexAndNaNIsNeverChosen) {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    const int64_t n = 5000;
    std::vector<float> x(size_t(4 * n), 0.0f);
    // Row 0: the maximum appears at 4321, 777 and 4999: 777 wins.
    for (int64_t i : {4321, 777, 4999}) x[size_t(i)] = 3.0f;
    // Row 1: NaNs everywhere but two equal finite values.
    for (int64_t i = 0; i < n; ++i) x[size_t(n + i)] = nan;
    x[size_t(n + 2500)] = -1.0f;
    x[size_t(n + 4000)] = -1.0f;
    // Row 2: all NaN gives 0.   Row 3: all -inf: a tie over the whole row gives 0.
    for (int64_t i = 0; i < n; ++i) x[size_t(2 * n + i)] = nan, x[size_t(3 * n + i)] = -inf;
    auto got = run(x, 0, 4, n);
    EXPECT_EQ(got[0], 777);
    EXPECT_EQ(got[1], 2500);
    EXPECT_EQ(got[2], 0);
    EXPECT_EQ(got[3], 0);
    for (int r = 0; r < 4; ++r) EXPECT_EQ(got[size_t(r)], cpu::argmax(x.data() + r * n, n)) << r;
}

}  // namespace
}  // namespace vkllm
