// The checked read-back (ops::copy_checked): copies rows exactly and counts each row's NaN and
// infinite values with the first one's index, against a host scan, on odd shapes (one value,
// rows longer than a workgroup's stride, offsets into larger buffers); clean rows stay
// {0, 0xffffffff}; a NaN with a payload and -inf count too; bad arguments are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/ops.h"
#include "test_support.h"

namespace vkllm {
namespace {

class CopyCheckedOp : public test::GpuTest {};

TEST_F(CopyCheckedOp, CopiesAndCountsNonFiniteValuesPerRow) {
    struct Shape {
        int64_t rows, n, src_offset;
    };
    const Shape shapes[] = {{1, 1, 0}, {3, 7, 5}, {5, 2053, 0}, {2, 32000, 3}, {7, 4099, 17}};
    for (const Shape& sh : shapes) {
        const size_t count = size_t(sh.rows * sh.n);
        auto v = test::random_floats(count + size_t(sh.src_offset), uint32_t(sh.n), -30.0f, 30.0f);
        float* rows = v.data() + sh.src_offset;
        // Row 0 stays clean; the others get non-finite values at spots that vary with the row.
        const float payload_nan = [] {
            uint32_t bits = 0x7fc00123u;
            float f;
            std::memcpy(&f, &bits, 4);
            return f;
        }();
        const float bad_values[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                                    -std::numeric_limits<float>::infinity(), payload_nan};
        for (int64_t r = 1; r < sh.rows; ++r) {
            for (int64_t k = 0; k <= r % 4; ++k) {
                const int64_t e = (sh.n - 1 - k * 997 * r) % sh.n;
                rows[r * sh.n + (e < 0 ? e + sh.n : e)] = bad_values[(r + k) % 4];
            }
        }
        gpu::Buffer src(ctx(), v.size() * 4, gpu::Memory::Device);
        src.upload(v.data(), v.size() * 4);
        gpu::Buffer dst(ctx(), count * 4, gpu::Memory::Host);
        gpu::Buffer flags(ctx(), size_t(sh.rows) * 8, gpu::Memory::Host);
        auto* f = static_cast<uint32_t*>(flags.mapped());
        for (int64_t r = 0; r < sh.rows; ++r) f[2 * r] = 0, f[2 * r + 1] = 0xffffffffu;

        gpu::Stream s(ctx());
        s.begin();
        ops::copy_checked(s, ops::f32_rows(src, sh.rows, sh.n, uint64_t(sh.src_offset)), ops::f32_rows(dst, sh.rows, sh.n), flags);
        s.submit_and_wait();

        const auto* got = static_cast<const float*>(dst.mapped());
        ASSERT_EQ(std::memcmp(got, rows, count * 4), 0) << sh.rows << "x" << sh.n << ": the copy is not exact";
        for (int64_t r = 0; r < sh.rows; ++r) {
            uint32_t want_count = 0, want_first = 0xffffffffu;
            for (int64_t e = 0; e < sh.n; ++e)
                if (!std::isfinite(rows[r * sh.n + e])) {
                    if (want_count == 0) want_first = uint32_t(e);
                    ++want_count;
                }
            EXPECT_EQ(f[2 * r], want_count) << sh.rows << "x" << sh.n << " row " << r;
            EXPECT_EQ(f[2 * r + 1], want_first) << sh.rows << "x" << sh.n << " row " << r;
            if (r > 0) {
                EXPECT_GT(want_count, 0u);
            }
        }
    }
}

TEST_F(CopyCheckedOp, RefusesBadArguments) {
    gpu::Buffer src(ctx(), 64, gpu::Memory::Device), dst(ctx(), 64, gpu::Memory::Host), flags(ctx(), 8, gpu::Memory::Host);
    gpu::Stream s(ctx());
    s.begin();
    EXPECT_THROW(ops::copy_checked(s, ops::f32_rows(src, 1, 0), ops::f32_rows(dst, 1, 0), flags), ops::ShapeError);
    EXPECT_THROW(ops::copy_checked(s, ops::f32_rows(src, 1, 17), ops::f32_rows(dst, 1, 17), flags), ops::ShapeError);   // src too small
    EXPECT_THROW(ops::copy_checked(s, ops::f32_rows(src, 2, 8), ops::f32_rows(dst, 2, 8), flags), ops::ShapeError);    // flags for one row
    s.submit_and_wait();
}

}  // namespace
}  // namespace vkllm
