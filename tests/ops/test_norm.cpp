// rms_norm and layer_norm on the GPU against the CPU reference.
#include <gtest/gtest.h>

#include <vector>

#include "cpu/ref_ops.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/ops.h"
#include "op_test_data.h"
#include "test_support.h"

namespace vkllm {
namespace {

class Norm : public test::GpuTest {
protected:
    gpu::Buffer upload(const std::vector<float>& v) { return test::upload(ctx(), v); }
    static std::vector<float> download(const gpu::Buffer& b) { return test::download(b); }
};

TEST_F(Norm, RmsNormMatchesReferenceForOddShapes) {
    const int64_t shapes[][2] = {{1, 1}, {3, 7}, {17, 64}, {5, 1000}, {2, 4097}, {70, 96}};
    for (auto [rows, n] : shapes) {
        for (bool with_weight : {false, true}) {
            auto x = test::random_floats(size_t(rows * n), uint32_t(rows * 31 + n), -3.0f, 3.0f);
            auto w = test::random_floats(size_t(n), 5, 0.5f, 1.5f);
            std::vector<float> ref(x.size());
            cpu::rms_norm(x.data(), with_weight ? w.data() : nullptr, ref.data(), rows, n, 1e-5f);

            gpu::Buffer xb = upload(x), wb = upload(w), yb(ctx(), x.size() * 4, gpu::Memory::Device);
            gpu::Stream s(ctx());
            s.begin();
            ops::rms_norm(s, ops::f32_rows(xb, rows, n), with_weight ? &wb : nullptr, ops::f32_rows(yb, rows, n), 1e-5f);
            s.submit_and_wait();
            EXPECT_LT(test::nmse(download(yb), ref), 1e-11) << rows << "x" << n << " weight " << with_weight;
        }
    }
}

// Per-head norm in place on [n_tokens, n_heads, head_dim] inside a larger buffer, rows strided.
TEST_F(Norm, RmsNormInPlaceWithStrideAndOffset) {
    const int64_t n_tokens = 5, n_heads = 3, head_dim = 40, row_stride = 48, offset = 13;
    const int64_t total = offset + n_tokens * n_heads * row_stride;
    auto buf = test::random_floats(size_t(total), 77);
    auto w = test::random_floats(size_t(head_dim), 78);
    std::vector<float> expect = buf;
    for (int64_t r = 0; r < n_tokens * n_heads; ++r) {
        float* row = expect.data() + offset + r * row_stride;
        cpu::rms_norm(row, w.data(), row, 1, head_dim, 1e-6f);
    }
    gpu::Buffer xb = upload(buf), wb = upload(w);
    gpu::Stream s(ctx());
    s.begin();
    const ops::TensorView heads = ops::f32_rows(xb, n_tokens * n_heads, head_dim, uint64_t(offset), row_stride);
    ops::rms_norm(s, heads, &wb, heads, 1e-6f);
    s.submit_and_wait();
    auto got = download(xb);
    EXPECT_LT(test::nmse(got, expect), 1e-11);
    // The gaps between rows and the prefix stay untouched.
    for (int64_t i = 0; i < offset; ++i) EXPECT_EQ(got[size_t(i)], buf[size_t(i)]);
    for (int64_t r = 0; r < n_tokens * n_heads; ++r)
        for (int64_t i = head_dim; i < row_stride; ++i) {
            size_t at = size_t(offset + r * row_stride + i);
            ASSERT_EQ(got[at], buf[at]) << "gap element " << at;
        }
}

TEST_F(Norm, LayerNormMatchesReferenceWithOptionalWeightAndBias) {
    const int64_t shapes[][2] = {{1, 1}, {3, 7}, {17, 768}, {2, 4097}};
    for (auto [rows, n] : shapes) {
        for (int mode = 0; mode < 4; ++mode) {
            const bool with_w = mode & 1, with_b = mode & 2;
            // An offset mean makes the centring matter.
            auto x = test::random_floats(size_t(rows * n), uint32_t(n + mode), 2.0f, 6.0f);
            auto w = test::random_floats(size_t(n), 11, 0.5f, 1.5f);
            auto b = test::random_floats(size_t(n), 12);
            std::vector<float> ref(x.size());
            cpu::layer_norm(x.data(), with_w ? w.data() : nullptr, with_b ? b.data() : nullptr, ref.data(), rows, n,
                            1e-5f);
            gpu::Buffer xb = upload(x), wb = upload(w), bb = upload(b), yb(ctx(), x.size() * 4, gpu::Memory::Device);
            gpu::Stream s(ctx());
            s.begin();
            ops::layer_norm(s, ops::f32_rows(xb, rows, n), with_w ? &wb : nullptr, with_b ? &bb : nullptr, ops::f32_rows(yb, rows, n),
                            1e-5f);
            s.submit_and_wait();
            EXPECT_LT(test::nmse(download(yb), ref), 1e-10) << rows << "x" << n << " mode " << mode;
        }
    }
}

TEST_F(Norm, LayerNormInPlaceStrided) {
    const int64_t rows = 4, n = 33, stride = 40;
    auto x = test::random_floats(size_t(rows * stride), 21);
    std::vector<float> expect = x;
    for (int64_t r = 0; r < rows; ++r) cpu::layer_norm(&expect[size_t(r * stride)], nullptr, nullptr,
                                                       &expect[size_t(r * stride)], 1, n, 1e-5f);
    gpu::Buffer xb = upload(x);
    gpu::Stream s(ctx());
    s.begin();
    const ops::TensorView x_rows = ops::f32_rows(xb, rows, n, 0, stride);
    ops::layer_norm(s, x_rows, nullptr, nullptr, x_rows, 1e-5f);
    s.submit_and_wait();
    EXPECT_LT(test::nmse(download(xb), expect), 1e-10);
}

TEST_F(Norm, BadShapesAreClearErrors) {
    gpu::Buffer xb(ctx(), 64, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    EXPECT_THROW(ops::rms_norm(s, ops::f32_rows(xb, 2, 16), nullptr, ops::f32_rows(xb, 2, 16), 1e-5f),
                 ops::ShapeError);  // needs 128 bytes
    EXPECT_THROW(ops::rms_norm(s, ops::f32_rows(xb, 2, 8, 0, 4), nullptr, ops::f32_rows(xb, 2, 8, 0, 4), 1e-5f),
                 ops::ShapeError);  // stride < n
    EXPECT_THROW(ops::layer_norm(s, ops::f32_rows(xb, 1, 0), nullptr, nullptr, ops::f32_rows(xb, 1, 0), 1e-5f),
                 ops::ShapeError);
    // Views: x and y must share shape and row stride.
    EXPECT_THROW(ops::rms_norm(s, ops::f32_rows(xb, 2, 8), nullptr, ops::f32_rows(xb, 1, 8), 1e-5f), ops::ShapeError);
    EXPECT_THROW(ops::layer_norm(s, ops::f32_rows(xb, 1, 8), nullptr, nullptr, ops::f32_rows(xb, 1, 8, 0, 16), 1e-5f),
                 ops::ShapeError);
    s.submit_and_wait();
}

}  // namespace
}  // namespace vkllm
