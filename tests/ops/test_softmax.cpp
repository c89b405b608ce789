// Row softmax on the GPU against the CPU reference.
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

class Softmax : public test::GpuTest {
protected:
    std::vector<float> run(const std::vector<float>& x, int64_t rows, int64_t n, float scale, bool in_place) {
        gpu::Buffer xb(ctx(), x.size() * 4, gpu::Memory::Device), yb(ctx(), x.size() * 4, gpu::Memory::Device);
        xb.upload(x.data(), x.size() * 4);
        gpu::Stream s(ctx());
        s.begin();
        ops::softmax(s, ops::f32_rows(xb, rows, n), ops::f32_rows(in_place ? xb : yb, rows, n), scale);
        s.submit_and_wait();
        std::vector<float> y(x.size());
        (in_place ? xb : yb).download(y.data(), y.size() * 4);
        return y;
    }
};

TEST_F(Softmax, MatchesReferenceAndRowsSumToOne) {
    const int64_t shapes[][2] = {{1, 1}, {3, 5}, {17, 64}, {2, 1000}, {1, 32001}};
    for (auto [rows, n] : shapes) {
        for (float scale : {1.0f, 0.125f, 8.0f}) {
            // Large logits: only a max-subtracted softmax stays finite.
            auto x = test::random_floats(size_t(rows * n), uint32_t(rows + n), -40.0f, 40.0f);
            std::vector<float> ref(x.size());
            cpu::softmax(x.data(), ref.data(), rows, n, scale);
            auto got = run(x, rows, n, scale, scale == 1.0f);
            EXPECT_LT(test::nmse(got, ref), 1e-10) << rows << "x" << n << " scale " << scale;
            for (int64_t r = 0; r < rows; ++r) {
                double sum = 0;
                for (int64_t i = 0; i < n; ++i) sum += got[size_t(r * n + i)];
                EXPECT_NEAR(sum, 1.0, 1e-4) << "row " << r;
            }
        }
    }
}

TEST_F(Softmax, MinusInfinityGetsZeroAndAllMaskedRowIsZero) {
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> x = {0.5f, -inf, 1.5f, -inf, /* row 2: */ -inf, -inf, -inf, -inf};
    std::vector<float> ref(x.size());
    cpu::softmax(x.data(), ref.data(), 2, 4);
    auto got = run(x, 2, 4, 1.0f, false);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(got[i], ref[i], 1e-6) << i;
    EXPECT_EQ(got[1], 0.0f);
    for (size_t i = 4; i < 8; ++i) EXPECT_EQ(got[i], 0.0f);
}

}  // namespace
}  // namespace vkllm
