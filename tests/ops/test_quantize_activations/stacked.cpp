// Decode's Q, K and V as one stacked matvec (ops::matvec_stacked, matvec_stacked_quantized): three
// matrices of one type lying anywhere in one buffer (here out of order, with gaps), their rows
// one after another in y. Each row must equal, bit for bit, what the matrix's own matvec writes
// (ops::matmul's one-token path, ops::matvec_quantized) at the same workgroup shape: the stack only
// changes which matrix a row is read from. Row counts are odd, so the matrices meet inside a
// workgroup's rows. Paths: x quantized beforehand (blocks of 32 and of 256), x rounded in the
// matvec, the norm fused in, 16-bit rows on and off 16-byte boundaries, and two matrices alone.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "gguf/quant.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/ops.h"
#include "../op_test_data.h"
#include "test_support.h"

namespace vkllm {
namespace {

using gguf::TensorType;
using test::download;
using test::upload;

// Three random matrices of `type` (n_in wide; rows[i] rows each) in one buffer: the third first,
// then the first, then the second, each start `gap` bytes past the previous end, rounded to `align`.
struct Stacked {
    gpu::Buffer buffer;
    std::vector<ops::Weight> w;
};

Stacked stack_in_one_buffer(gpu::Context& ctx, TensorType type, int64_t n_in, std::array<int64_t, 3> rows,
                            uint64_t gap, uint64_t align) {
    std::array<std::vector<uint8_t>, 3> bytes;
    for (size_t i = 0; i < 3; ++i) {
        const auto values = test::random_floats(size_t(n_in * rows[i]), uint32_t(17 + i), -1.0f, 1.0f);
        bytes[i] = gguf::quantize(type, values.data(), values.size());
    }
    std::array<uint64_t, 3> offset{};
    uint64_t at = gap;
    for (size_t i : {2u, 0u, 1u}) {
        at = (at + align - 1) / align * align;
        offset[i] = at;
        at += ops::weight_buffer_bytes(type, n_in, rows[i]) + gap;
    }
    Stacked st{gpu::Buffer(ctx, at, gpu::Memory::Device), {}};
    for (size_t i = 0; i < 3; ++i) {
        st.buffer.upload(bytes[i].data(), bytes[i].size(), offset[i]);
        st.w.push_back({type, &st.buffer, n_in, rows[i], offset[i]});
    }
    return st;
}

class MatvecStacked : public test::GpuTest {
protected:
    // The stacked matvec of the first n matrices against each one's own matvec, bit for bit:
    // `quantized` reads x quantized beforehand; otherwise x as floats, rounded in the matvec
    // where round_x, normalised in it where `norm`.
    void check(TensorType type, int64_t n_in, std::array<int64_t, 3> rows, size_t n, bool quantized, bool round_x,
               bool norm, uint64_t align = 256) {
        SCOPED_TRACE(std::string(gguf::type_traits(type)->name) + (quantized ? " quantized x" : " float x") +
                     (round_x ? ", rounded" : "") + (norm ? ", norm" : "") + ", align " + std::to_string(align));
        const Stacked st = stack_in_one_buffer(ctx(), type, n_in, rows, 52, align);
        std::vector<const ops::Weight*> ws;
        int64_t total = 0;
        for (size_t i = 0; i < n; ++i) {
            ws.push_back(&st.w[i]);
            total += rows[i];
        }
        ASSERT_TRUE(ops::matvec_stack_fits(ctx(), ws));
        const auto x = test::random_floats(size_t(n_in), 5, -3.0f, 3.0f);
        const auto nw = test::random_floats(size_t(n_in), 6, 0.5f, 1.5f);
        gpu::Buffer xb = upload(ctx(), x), nb = upload(ctx(), nw);
        gpu::Buffer qb(ctx(), size_t(n_in) * 2 + 64, gpu::Memory::Device);
        gpu::Buffer stacked(ctx(), size_t(total) * 4, gpu::Memory::Device), alone(ctx(), size_t(total) * 4, gpu::Memory::Device);
        const ops::MatvecNorm fused{&nb, 0, 1e-5f};
        const ops::QuantizedActs q =
            quantized ? ops::quantized_acts(qb, ops::activation_rounding(type), 1, n_in) : ops::QuantizedActs{};
        gpu::Stream s(ctx());
        s.begin();
        if (quantized) {
            ops::quantize_activations(s, ops::f32_rows(xb, 1, n_in), q);
            s.barrier("x is quantized before the matvecs read it");
            ops::matvec_stacked_quantized(s, ws, q, ops::f32_rows(stacked, 1, total));
        } else {
            ops::matvec_stacked(s, ws, ops::f32_rows(xb, 1, n_in), ops::f32_rows(stacked, 1, total), round_x,
                                norm ? &fused : nullptr);
        }
        int64_t first = 0;
        for (const ops::Weight* w : ws) {
            const ops::TensorView y = ops::f32_rows(alone, 1, w->n_out, uint64_t(first));
            if (quantized) ops::matvec_quantized(s, *w, q, y);
            else ops::matmul(s, *w, ops::f32_rows(xb, 1, n_in), y, false, round_x, norm ? &fused : nullptr);
            first += w->n_out;
        }
        s.submit_and_wait();
        const std::vector<float> got = download(stacked), want = download(alone);
        for (int64_t r = 0; r < total; ++r) ASSERT_EQ(got[size_t(r)], want[size_t(r)]) << "row " << r;
    }
};

TEST_F(MatvecStacked, QuantizedXEqualsEachMatrixAlone) {
    check(TensorType::Q4_0, 96, {37, 13, 11}, 3, /*quantized=*/true, false, false);
    check(TensorType::Q4_K, 512, {9, 5, 7}, 3, /*quantized=*/true, false, false);
}

TEST_F(MatvecStacked, FloatXEqualsEachMatrixAlone) {
    check(TensorType::Q8_0, 64, {21, 7, 7}, 3, false, /*round_x=*/true, false);
    check(TensorType::F16, 72, {19, 6, 5}, 3, false, false, /*norm=*/true);                 // 16-byte rows
    check(TensorType::F16, 72, {19, 6, 5}, 3, false, false, /*norm=*/true, /*align=*/4);    // 4-byte aligned
    check(TensorType::F32, 40, {11, 3, 3}, 2, false, false, false);                          // two matrices
}

TEST_F(MatvecStacked, RefusesWhatIsNotOneStack) {
    const Stacked a = stack_in_one_buffer(ctx(), TensorType::Q8_0, 64, {4, 4, 4}, 0, 64);
    const Stacked b = stack_in_one_buffer(ctx(), TensorType::Q8_0, 64, {4, 4, 4}, 0, 64);
    const Stacked wide = stack_in_one_buffer(ctx(), TensorType::Q8_0, 96, {4, 4, 4}, 0, 64);
    const Stacked f16 = stack_in_one_buffer(ctx(), TensorType::F16, 64, {4, 4, 4}, 0, 64);
    const ops::Weight* one[] = {&a.w[0]};
    const ops::Weight* buffers[] = {&a.w[0], &b.w[1]};
    const ops::Weight* widths[] = {&a.w[0], &wide.w[1]};
    const ops::Weight* types[] = {&a.w[0], &f16.w[1]};
    for (auto ws : {std::span<const ops::Weight* const>(one), std::span<const ops::Weight* const>(buffers),
                    std::span<const ops::Weight* const>(widths), std::span<const ops::Weight* const>(types)})
        EXPECT_FALSE(ops::matvec_stack_fits(ctx(), ws));
    gpu::Buffer xb(ctx(), 64 * 4, gpu::Memory::Device), yb(ctx(), 64 * 4, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    EXPECT_THROW(ops::matvec_stacked(s, buffers, ops::f32_rows(xb, 1, 64), ops::f32_rows(yb, 1, 8)), ops::ShapeError);
    const ops::Weight* two[] = {&a.w[0], &a.w[1]};
    EXPECT_THROW(ops::matvec_stacked(s, two, ops::f32_rows(xb, 1, 64), ops::f32_rows(yb, 1, 7)), ops::ShapeError);
    s.submit_and_wait();
}

}  // namespace
}  // namespace vkllm
