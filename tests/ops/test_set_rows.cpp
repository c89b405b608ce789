// The KV-cache write by position (ops::set_rows_into_slots) against the host: odd row lengths,
// a ring that wraps inside one call, a source offset, untouched slots keeping their values, and
// bad arguments refused.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "gguf/quant.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/ops.h"
#include "test_support.h"

namespace vkllm {
namespace {

class SetRowsOp : public test::GpuTest {};

TEST_F(SetRowsOp, WritesEachRowToItsPositionsSlot) {
    struct Case {
        int64_t n;
        int slots;
        std::vector<int32_t> positions;
        int64_t src_offset;
    };
    const Case cases[] = {{1, 1, {0}, 0},
                          {7, 5, {3, 4, 5, 6}, 3},           // wraps: slots 3, 4, 0, 1
                          {129, 40, {39}, 0},               // the last slot
                          {1000, 9, {16, 17, 18, 19, 20}, 11},
                          {4099, 3, {7, 8}, 1}};
    for (const Case& c : cases) {
        const int64_t T = int64_t(c.positions.size());
        auto src = test::random_floats(size_t(c.src_offset + T * c.n), uint32_t(c.n), -5.0f, 5.0f);
        auto before = test::random_floats(size_t(c.slots) * size_t(c.n), uint32_t(c.slots + 100), 10.0f, 20.0f);
        gpu::Buffer sb(ctx(), src.size() * 4, gpu::Memory::Device), db(ctx(), before.size() * 4, gpu::Memory::Device);
        sb.upload(src.data(), src.size() * 4);
        db.upload(before.data(), before.size() * 4);
        gpu::Buffer pb(ctx(), size_t(T) * 4, gpu::Memory::Host);
        std::memcpy(pb.mapped(), c.positions.data(), size_t(T) * 4);

        gpu::Stream s(ctx());
        s.begin();
        ops::set_rows_into_slots(s, sb, uint64_t(c.src_offset), pb, T, c.n, db, c.slots);
        s.submit_and_wait();
        std::vector<float> got(before.size());
        db.download(got.data(), got.size() * 4);

        std::vector<float> want = before;
        for (int64_t t = 0; t < T; ++t) {
            const int64_t slot = c.positions[size_t(t)] % c.slots;
            std::memcpy(&want[size_t(slot * c.n)], &src[size_t(c.src_offset + t * c.n)], size_t(c.n) * 4);
        }
        EXPECT_EQ(got, want) << "n " << c.n << ", slots " << c.slots;

        // The same into an f16 cache: each value rounded to nearest even on its way in.
        if (!ctx().caps().storage_16bit) continue;
        std::vector<uint16_t> before16(before.size()), want16(before.size()), got16(before.size());
        for (size_t i = 0; i < before.size(); ++i) before16[i] = gguf::fp32_to_fp16(before[i]);
        gpu::Buffer hb(ctx(), before16.size() * 2 + 2, gpu::Memory::Device);  // odd lengths: a whole last word
        hb.upload(before16.data(), before16.size() * 2);
        s.begin();
        ops::set_rows_into_slots(s, sb, uint64_t(c.src_offset), pb, T, c.n, hb, c.slots, ops::CacheType::F16);
        s.submit_and_wait();
        hb.download(got16.data(), got16.size() * 2);
        want16 = before16;
        for (int64_t t = 0; t < T; ++t)
            for (int64_t e = 0; e < c.n; ++e)
                want16[size_t((c.positions[size_t(t)] % c.slots) * c.n + e)] =
                    gguf::fp32_to_fp16(src[size_t(c.src_offset + t * c.n + e)]);
        EXPECT_EQ(got16, want16) << "f16, n " << c.n << ", slots " << c.slots;
    }
}

TEST_F(SetRowsOp, RefusesBadArguments) {
    gpu::Buffer src(ctx(), 64, gpu::Memory::Device), pos(ctx(), 8, gpu::Memory::Host), dst(ctx(), 64, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    EXPECT_THROW(ops::set_rows_into_slots(s, src, 0, pos, 1, 0, dst, 2), ops::ShapeError);
    EXPECT_THROW(ops::set_rows_into_slots(s, src, 0, pos, 1, 4, dst, 0), ops::ShapeError);
    EXPECT_THROW(ops::set_rows_into_slots(s, src, 0, pos, 1, 4, dst, 5), ops::ShapeError);   // dst holds 4 rows
    EXPECT_THROW(ops::set_rows_into_slots(s, src, 0, pos, 3, 8, dst, 2), ops::ShapeError);   // src holds 2 rows
    s.submit_and_wait();
}

}  // namespace
}  // namespace vkllm
