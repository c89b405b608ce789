// Elementwise ops on the GPU against the CPU reference.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
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

class Elementwise : public test::GpuTest {
protected:
    gpu::Buffer upload(const std::vector<float>& v) { return test::upload(ctx(), v); }
    static std::vector<float> download(const gpu::Buffer& b) { return test::download(b); }
    // Inputs with a few extreme values, where naive exp/tanh forms overflow.
    std::vector<float> inputs(size_t n, uint32_t seed) {
        auto v = test::random_floats(n, seed, -6.0f, 6.0f);
        const float extremes[] = {-100.0f, -30.0f, 30.0f, 100.0f, 0.0f, 1e-4f};
        if (n >= 12)  // (alone in a tiny input, silu(-100) ~ 1e-42 is a denormal GPUs flush)
            for (size_t i = 0; i < 6; ++i) v[i * (n / 6)] = extremes[i];
        return v;
    }
    template <class F>
    void record(F&& f) {
        gpu::Stream s(ctx());
        s.begin();
        f(s);
        s.submit_and_wait();
    }
};

const size_t kSizes[] = {1, 7, 1000, (1u << 20) + 3};

TEST_F(Elementwise, GatedUnitsMatchReferenceAndMayWriteInPlace) {
    for (size_t n : kSizes) {
        auto g = inputs(n, uint32_t(n)), u = test::random_floats(n, uint32_t(n + 1));
        std::vector<float> ref_swiglu(n), ref_geglu(n);
        cpu::swiglu(g.data(), u.data(), ref_swiglu.data(), 1, int64_t(n));
        cpu::geglu(g.data(), u.data(), ref_geglu.data(), 1, int64_t(n));
        gpu::Buffer gb = upload(g), ub = upload(u), out(ctx(), n * 4, gpu::Memory::Device), g2 = upload(g);
        record([&](gpu::Stream& s) {
            ops::swiglu(s, ops::f32_vector(gb, int64_t(n)), ops::f32_vector(ub, int64_t(n)), ops::f32_vector(out, int64_t(n)));
            ops::geglu(s, ops::f32_vector(g2, int64_t(n)), ops::f32_vector(ub, int64_t(n)), ops::f32_vector(g2, int64_t(n)));  // in place over the gate
        });
        EXPECT_LT(test::nmse(download(out), ref_swiglu), 1e-12) << n;
        EXPECT_LT(test::nmse(download(g2), ref_geglu), 1e-12) << n;
    }
}

TEST_F(Elementwise, GeluFormsMatchReference) {
    for (size_t n : kSizes) {
        auto x = inputs(n, uint32_t(3 * n));
        std::vector<float> ref_tanh(n), ref_erf(n);
        cpu::gelu(x.data(), ref_tanh.data(), int64_t(n));
        cpu::gelu_erf(x.data(), ref_erf.data(), int64_t(n));
        gpu::Buffer xb = upload(x), yb(ctx(), n * 4, gpu::Memory::Device), x2 = upload(x);
        record([&](gpu::Stream& s) {
            ops::gelu(s, ops::f32_vector(xb, int64_t(n)), ops::f32_vector(yb, int64_t(n)));
            ops::gelu_erf(s, ops::f32_vector(x2, int64_t(n)), ops::f32_vector(x2, int64_t(n)));
        });
        auto got_tanh = download(yb), got_erf = download(x2);
        EXPECT_LT(test::nmse(got_tanh, ref_tanh), 1e-12) << n;
        EXPECT_LT(test::nmse(got_erf, ref_erf), 1e-12) << n;
        EXPECT_LT(test::max_abs_diff(got_erf, ref_erf), 2e-5) << n;
    }
}

TEST_F(Elementwise, AddWithAliasedOutput) {
    for (size_t n : kSizes) {
        auto a = test::random_floats(n, 9), b = test::random_floats(n, 10);
        std::vector<float> ref(n);
        cpu::add(a.data(), b.data(), ref.data(), int64_t(n));
        gpu::Buffer ab = upload(a), bb = upload(b), cb = upload(a), out(ctx(), n * 4, gpu::Memory::Device);
        record([&](gpu::Stream& s) {
            ops::add(s, ops::f32_vector(ab, int64_t(n)), ops::f32_vector(bb, int64_t(n)), ops::f32_vector(out, int64_t(n)));
            // The first add reads b, the second writes it: write-after-read needs a barrier
            // (synchronization validation reports SYNC-HAZARD-WRITE-AFTER-READ without it).
            s.barrier("b read above, written below");
            ops::add(s, ops::f32_vector(cb, int64_t(n)), ops::f32_vector(bb, int64_t(n)), ops::f32_vector(bb, int64_t(n)));  // out aliases b
        });
        EXPECT_EQ(download(out), ref) << n;  // one float add: exact
        EXPECT_EQ(download(bb), ref) << n;
    }
}

TEST_F(Elementwise, ScaleInPlaceAtAnOffset) {
    const size_t total = 1001, offset = 5, n = 990;
    auto x = test::random_floats(total, 4);
    std::vector<float> expect = x;
    for (size_t i = offset; i < offset + n; ++i) expect[i] = x[i] * 0.125f * 3.0f;
    gpu::Buffer xb = upload(x);
    record([&](gpu::Stream& s) { ops::scale(s, ops::f32_vector(xb, int64_t(n), offset), 0.375f); });
    auto got = download(xb);
    for (size_t i = 0; i < total; ++i) ASSERT_FLOAT_EQ(got[i], expect[i]) << i;
}

// llama.cpp's CPU GELU reads a table of fp16 values: x and gelu(x) rounded to fp16.
TEST_F(Elementwise, GeluFp16TableMatchesLlamaCppsTabulation) {
    const size_t n = 5000;
    auto x = inputs(n, 21);
    auto up = test::random_floats(n, 22);
    std::vector<float> want_gelu(n), want_geglu(n);
    for (size_t i = 0; i < n; ++i) {
        float g;
        if (x[i] <= -10.0f) g = 0.0f;
        else if (x[i] >= 10.0f) g = x[i];
        else {
            float xr = gguf::fp16_to_fp32(gguf::fp32_to_fp16(x[i]));
            cpu::gelu(&xr, &g, 1);
            g = gguf::fp16_to_fp32(gguf::fp32_to_fp16(g));
        }
        want_gelu[i] = g;
        want_geglu[i] = g * up[i];
    }
    gpu::Buffer xb = upload(x), ub = upload(up), yb = upload(std::vector<float>(n)), zb = upload(std::vector<float>(n));
    record([&](gpu::Stream& s) {
        ops::gelu(s, ops::f32_vector(xb, int64_t(n)), ops::f32_vector(yb, int64_t(n)), /*fp16_table=*/true);
        ops::geglu(s, ops::f32_vector(xb, int64_t(n)), ops::f32_vector(ub, int64_t(n)), ops::f32_vector(zb, int64_t(n)), /*fp16_table=*/true);
    });
    auto got_gelu = download(yb), got_geglu = download(zb);
    // A last-bit difference in tanh may round to the neighbouring fp16 value; allow one fp16 ulp.
    for (size_t i = 0; i < n; ++i) {
        ASSERT_NEAR(got_gelu[i], want_gelu[i], std::fabs(want_gelu[i]) * 1e-3f + 1e-7f) << "x=" << x[i];
        ASSERT_NEAR(got_geglu[i], want_geglu[i], std::fabs(want_geglu[i]) * 1e-3f + 1e-7f) << "x=" << x[i];
    }
    EXPECT_LT(test::nmse(got_gelu, want_gelu), 1e-12);
}

TEST_F(Elementwise, ClampedSwigluMatchesReference) {
    for (size_t n : {size_t(5), size_t(3000)}) {
        auto gate = inputs(n, 31), up = inputs(n, 32);
        for (float& v : gate) v *= 2.0f;  // beyond the limit of 7 on both sides
        for (float& v : up) v *= 2.0f;
        std::vector<float> want(n);
        cpu::swiglu_oai(gate.data(), up.data(), want.data(), 1, int64_t(n), 1.702f, 7.0f);
        gpu::Buffer gb = upload(gate), ub = upload(up);
        record([&](gpu::Stream& s) { ops::swiglu_oai(s, ops::f32_vector(gb, int64_t(n)), ops::f32_vector(ub, int64_t(n)), ops::f32_vector(gb, int64_t(n)), 1.702f, 7.0f); });
        EXPECT_LT(test::nmse(download(gb), want), 1e-12);
    }
}

TEST_F(Elementwise, SoftcapMatchesReferenceAndSaturates) {
    for (size_t n : {size_t(7), size_t(1000)}) {
        auto x = inputs(n, 11);
        for (float& v : x) v *= 20.0f;  // logits far beyond the cap, both signs
        const size_t offset = 3;
        std::vector<float> padded(offset, 0.0f);
        padded.insert(padded.end(), x.begin(), x.end());
        std::vector<float> expect(n);
        cpu::softcap(x.data(), expect.data(), int64_t(n), 30.0f);
        gpu::Buffer xb = upload(padded);
        record([&](gpu::Stream& s) { ops::softcap(s, ops::f32_vector(xb, int64_t(n), offset), 30.0f); });
        auto got = download(xb);
        std::vector<float> tail(got.begin() + long(offset), got.end());
        EXPECT_LT(test::nmse(tail, expect), 1e-12);
        for (float v : tail) ASSERT_LE(std::fabs(v), 30.0f);
    }
}

TEST_F(Elementwise, AddBiasOverStridedRows) {
    const int64_t rows = 17, n = 30, stride = 37, offset = 3;
    auto x = test::random_floats(size_t(offset + rows * stride), 6);
    auto bias = test::random_floats(size_t(n), 7);
    std::vector<float> expect = x;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < n; ++c) expect[size_t(offset + r * stride + c)] += bias[size_t(c)];
    gpu::Buffer xb = upload(x), bb = upload(bias);
    record([&](gpu::Stream& s) { ops::add_bias(s, ops::f32_rows(xb, rows, n, offset, stride), ops::f32_vector(bb, n)); });
    EXPECT_EQ(download(xb), expect);
}

TEST_F(Elementwise, BuffersTooSmallAreClearErrors) {
    gpu::Buffer small(ctx(), 16, gpu::Memory::Device), big(ctx(), 64, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    EXPECT_THROW(ops::add(s, ops::f32_vector(big, 16), ops::f32_vector(small, 16), ops::f32_vector(big, 16)),
                 ops::ShapeError);
    EXPECT_THROW(ops::scale(s, ops::f32_vector(big, 16, 1), 2.0f), ops::ShapeError);
    EXPECT_THROW(ops::add_bias(s, ops::f32_rows(big, 4, 5), ops::f32_vector(small, 5)), ops::ShapeError);  // bias has 4 floats
    EXPECT_THROW(ops::add_bias(s, ops::f32_rows(big, 4, 3), ops::f32_vector(small, 4)), ops::ShapeError);  // 4 for rows of 3
    // Views: one shape, packed rows.
    EXPECT_THROW(ops::swiglu(s, ops::f32_rows(big, 2, 4), ops::f32_rows(big, 4, 2), ops::f32_rows(big, 2, 4)),
                 ops::ShapeError);
    EXPECT_THROW(ops::gelu(s, ops::f32_rows(big, 2, 4, 0, 8), ops::f32_rows(big, 2, 4, 0, 8)), ops::ShapeError);
    s.submit_and_wait();
}

}  // namespace
}  // namespace vkllm
