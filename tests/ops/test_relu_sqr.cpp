// relu_sqr (ops/activation_ops.h) against the CPU reference: odd shapes, rows inside wider
// strided buffers at offsets, in place, and the checks that refuse bad views.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "cpu/ref_activation_extra.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "op_test_data.h"
#include "ops/activation_ops.h"
#include "test_support.h"

namespace vkllm {
namespace {

class ReluSqr : public test::GpuTest {
protected:
    gpu::Buffer upload(const std::vector<float>& v) { return test::upload(ctx(), v); }
    std::vector<float> download(const gpu::Buffer& b) { return test::download(b); }
    void run(const ops::TensorView& x, const ops::TensorView& y) {
        gpu::Stream s(ctx());
        s.begin();
        ops::relu_sqr(s, x, y);
        s.submit_and_wait();
    }
};

// The reference over a strided view: rows of `cols` values `stride` apart from `first`.
void ref_rows(const std::vector<float>& x, int64_t x_first, int64_t x_stride, std::vector<float>& y, int64_t y_first,
              int64_t y_stride, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; ++r)
        cpu::relu_sqr(x.data() + x_first + r * x_stride, y.data() + y_first + r * y_stride, cols);
}

TEST_F(ReluSqr, OutOfPlaceMatchesReferenceOnStridedRows) {
    struct Case {
        int64_t rows, cols, x_first, x_stride, y_first, y_stride;
    };
    // strides 0 mean packed rows; the last case has more rows than workgroup rows (each
    // workgroup loops over several).
    const Case cases[] = {{1, 1, 0, 0, 0, 0},     {3, 7, 5, 11, 2, 9},  {17, 33, 1, 40, 0, 0},
                          {1, 1000, 3, 0, 7, 0}, {5, 129, 0, 0, 1, 130}, {300, 513, 0, 515, 2, 0},
                          {23, 70001, 4, 70003, 0, 0}};
    for (const Case& c : cases) {
        const int64_t xs = c.x_stride ? c.x_stride : c.cols, ys = c.y_stride ? c.y_stride : c.cols;
        auto x = test::random_floats(size_t(c.x_first + (c.rows - 1) * xs + c.cols), uint32_t(c.rows * 7 + c.cols),
                                     -3.0f, 3.0f);
        const size_t ny = size_t(c.y_first + (c.rows - 1) * ys + c.cols);
        std::vector<float> y0(ny, -5.0f);  // values outside the view must stay as they are
        std::vector<float> ref = y0;
        ref_rows(x, c.x_first, xs, ref, c.y_first, ys, c.rows, c.cols);
        gpu::Buffer xb = upload(x), yb = upload(y0);
        run(ops::f32_rows(xb, c.rows, c.cols, uint64_t(c.x_first), c.x_stride),
            ops::f32_rows(yb, c.rows, c.cols, uint64_t(c.y_first), c.y_stride));
        EXPECT_EQ(download(yb), ref) << c.rows << "x" << c.cols;
        EXPECT_EQ(download(xb), x) << "x must not change";
    }
}

TEST_F(ReluSqr, InPlaceAndSpecialValues) {
    std::vector<float> x = {-0.0f, 0.0f, -1.5f, 2.5f, 1e-30f, -1e30f, 1e20f,
                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), 3.0f, -7.0f};
    std::vector<float> ref = x;
    // the first value (index 0) and the last are outside the view: rows 2 x 4 at stride 5 from 1
    for (int r = 0; r < 2; ++r) cpu::relu_sqr(x.data() + 1 + r * 5, ref.data() + 1 + r * 5, 4);
    gpu::Buffer b = upload(x);
    const ops::TensorView v = ops::f32_rows(b, 2, 4, 1, 5);
    run(v, v);
    const auto got = download(b);
    EXPECT_EQ(got, ref);
    EXPECT_EQ(got[1], 0.0f);          // 0 -> 0
    EXPECT_EQ(got[3], 6.25f);         // 2.5 -> 6.25
    EXPECT_TRUE(std::isinf(got[6]));  // 1e20^2 overflows, as on the CPU
    EXPECT_EQ(got[8], 0.0f);          // -inf -> 0
    EXPECT_EQ(got[0], -0.0f);         // outside the view: unchanged
    EXPECT_EQ(got[5], -1e30f);
    EXPECT_EQ(got[10], -7.0f);
}

TEST_F(ReluSqr, RefusesBadViews) {
    gpu::Buffer a = upload(std::vector<float>(64, 1.0f)), b = upload(std::vector<float>(64, 1.0f));
    // shapes differ
    EXPECT_THROW(run(ops::f32_rows(a, 2, 8), ops::f32_rows(b, 4, 4)), ops::ShapeError);
    // partial overlap in one buffer
    EXPECT_THROW(run(ops::f32_rows(a, 2, 8), ops::f32_rows(a, 2, 8, 4)), ops::ShapeError);
    // the same rows at another stride
    EXPECT_THROW(run(ops::f32_rows(a, 2, 8, 0, 16), ops::f32_rows(a, 2, 8, 0, 8)), ops::ShapeError);
    // past the buffer's end
    EXPECT_THROW(run(ops::f32_rows(a, 9, 8), ops::f32_rows(b, 9, 8)), ops::ShapeError);
    // not f32
    ops::TensorView h = ops::f32_rows(a, 2, 8);
    h.type = gguf::TensorType::F16;
    EXPECT_THROW(run(h, ops::f32_rows(b, 2, 8)), ops::ShapeError);
    // disjoint halves of one buffer are fine, and so are the two halves of each row
    run(ops::f32_rows(a, 1, 32), ops::f32_rows(a, 1, 32, 32));
    run(ops::f32_rows(a, 8, 4, 0, 8), ops::f32_rows(a, 8, 4, 4, 8));
    // but not halves shifted into the next row
    EXPECT_THROW(run(ops::f32_rows(a, 7, 4, 0, 8), ops::f32_rows(a, 7, 4, 10, 8)), ops::ShapeError);
}

}  // namespace
}  // namespace vkllm
