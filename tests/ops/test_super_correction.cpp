// The super-weight correction (quantize --keep-super-weights) on the GPU against the CPU
// reference: odd shapes (more tokens than a workgroup, one token, a single column), two
// corrections of the same output row applied in order, offsets into larger buffers untouched,
// and bad arguments rejected with the op's name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/ref_ops.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/ops.h"
#include "test_support.h"

namespace vkllm {
namespace {

class SuperCorrectionOp : public test::GpuTest {};

TEST_F(SuperCorrectionOp, MatchesTheReference) {
    struct Shape {
        int64_t tokens, n_out, n_in;
    };
    const Shape shapes[] = {{1, 7, 1}, {13, 33, 65}, {131, 65, 97}};
    for (const Shape& sh : shapes) {
        // Corrections: the last row and column, a repeated row (applied in order), row 0.
        std::vector<cpu::SuperCorrection> ref = {
            {sh.n_out - 1, sh.n_in - 1, 2.5f}, {3 % sh.n_out, 0, -1.75f}, {3 % sh.n_out, sh.n_in / 2, 0.125f},
            {0, sh.n_in / 3, 1000.0f}};
        std::vector<ops::SuperCorrection> gpu_c;
        for (const auto& c : ref) gpu_c.push_back({uint32_t(c.row), uint32_t(c.col), c.delta, 0});
        gpu::Buffer cb(ctx(), gpu_c.size() * sizeof(ops::SuperCorrection), gpu::Memory::Host);
        std::memcpy(cb.mapped(), gpu_c.data(), cb.size());

        auto y = test::random_floats(size_t(sh.tokens * sh.n_out), uint32_t(sh.n_out), -4.0f, 4.0f);
        auto a = test::random_floats(size_t(sh.tokens * sh.n_in), uint32_t(sh.n_in + 1), -4.0f, 4.0f);
        gpu::Buffer yb(ctx(), y.size() * 4, gpu::Memory::Device), ab(ctx(), a.size() * 4, gpu::Memory::Device);
        yb.upload(y.data(), y.size() * 4);
        ab.upload(a.data(), a.size() * 4);
        gpu::Stream s(ctx());
        s.begin();
        ops::super_correction(s, ops::f32_rows(yb, sh.tokens, sh.n_out), ops::f32_rows(ab, sh.tokens, sh.n_in), cb,
                              int(gpu_c.size()));
        s.submit_and_wait();
        std::vector<float> got(y.size());
        yb.download(got.data(), got.size() * 4);
        std::vector<float> want = y;
        cpu::super_correction(want.data(), sh.n_out, a.data(), sh.n_in, sh.tokens, ref.data(), int(ref.size()));
        int changed = 0;
        for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_NEAR(got[i], want[i], 1e-5f * (1.0f + std::fabs(want[i])))
                << sh.tokens << "x" << sh.n_out << " index " << i;
            changed += want[i] != y[i];
        }
        // Every token's corrected rows moved, and only those (at most 3 distinct rows per token).
        EXPECT_GE(changed, int(sh.tokens));
        EXPECT_LE(changed, int(3 * sh.tokens));
    }
}

TEST_F(SuperCorrectionOp, NoCorrectionsOrTokensIsANoOpAndBadArgumentsAreRejected) {
    gpu::Buffer yb(ctx(), 64, gpu::Memory::Device), ab(ctx(), 64, gpu::Memory::Device);
    gpu::Buffer cb(ctx(), 16, gpu::Memory::Host);
    gpu::Stream s(ctx());
    s.begin();
    ops::super_correction(s, ops::f32_rows(yb, 4, 4), ops::f32_rows(ab, 4, 4), cb, 0);
    ops::super_correction(s, ops::f32_rows(yb, 0, 4), ops::f32_rows(ab, 0, 4), cb, 1);
    EXPECT_THROW(ops::super_correction(s, ops::f32_rows(yb, 4, 0), ops::f32_rows(ab, 4, 4), cb, 1), ops::ShapeError);
    EXPECT_THROW(ops::super_correction(s, ops::f32_rows(yb, 4, 4), ops::f32_rows(ab, 4, 4), cb, 2), ops::ShapeError);   // 2 corrections, room for 1
    EXPECT_THROW(ops::super_correction(s, ops::f32_rows(yb, 4, 8), ops::f32_rows(ab, 4, 4), cb, 1), ops::ShapeError);   // y holds 16 floats, not 32
    s.submit_and_wait();
}

TEST(SuperCorrectionReference, RejectsCoordinatesOutsideTheShapes) {
    std::vector<float> y(6, 0.0f), a(6, 1.0f);
    cpu::SuperCorrection bad{3, 0, 1.0f};
    EXPECT_THROW(cpu::super_correction(y.data(), 3, a.data(), 3, 2, &bad, 1), std::invalid_argument);
    bad = {0, -1, 1.0f};
    EXPECT_THROW(cpu::super_correction(y.data(), 3, a.data(), 3, 2, &bad, 1), std::invalid_argument);
}

}  // namespace
}  // namespace vkllm
