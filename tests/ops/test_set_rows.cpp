// The KV-cache write by position (ops::set_rows_into_slots) against the host: odd row lengths,
// a ring that wraps inside one call, a source offset, untouched slots keeping their values, and
// bad arguments refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/ref_ops.h"
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
        ops::set_rows_into_slots(s, ops::f32_rows(sb, T, c.n, uint64_t(c.src_offset)), ops::i32_vector(pb, T),
                                 ops::KvView{&db, c.slots, c.n, KvCacheType::F32});
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
        ops::set_rows_into_slots(s, ops::f32_rows(sb, T, c.n, uint64_t(c.src_offset)), ops::i32_vector(pb, T),
                                 ops::KvView{&hb, c.slots, c.n, KvCacheType::F16});
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

// Source rows inside wider rows (MLA's latent values are the first kv_lora floats of each
// [c | kr] row): each slot gets its row's first n floats, into f32, f16 and q8_0 caches alike.
TEST_F(SetRowsOp, ReadsRowsAtAStride) {
    const int64_t n = 64, stride = 80, T = 3, slots = 5;
    const std::vector<int32_t> positions{4, 5, 1};  // slots 4, 0, 1
    const auto src = test::random_floats(size_t(2 + T * stride), 9, -3.0f, 3.0f);
    gpu::Buffer sb = gpu::Buffer(ctx(), src.size() * 4, gpu::Memory::Device);
    sb.upload(src.data(), src.size() * 4);
    gpu::Buffer pb(ctx(), size_t(T) * 4, gpu::Memory::Host);
    std::memcpy(pb.mapped(), positions.data(), size_t(T) * 4);
    for (KvCacheType type : {KvCacheType::F32, KvCacheType::F16, KvCacheType::Q8_0}) {
        if (type == KvCacheType::F16 && !ctx().caps().storage_16bit) continue;
        const uint64_t bytes = ops::cache_bytes(type, uint64_t(slots * n));
        gpu::Buffer strided(ctx(), bytes, gpu::Memory::Device), packed(ctx(), bytes, gpu::Memory::Device);
        std::vector<float> rows(size_t(T * n));
        for (int64_t t = 0; t < T; ++t)
            std::memcpy(&rows[size_t(t * n)], &src[size_t(2 + t * stride)], size_t(n) * 4);
        gpu::Buffer rb = gpu::Buffer(ctx(), rows.size() * 4, gpu::Memory::Device);
        rb.upload(rows.data(), rows.size() * 4);
        strided.fill_zero();
        packed.fill_zero();
        gpu::Stream s(ctx());
        s.begin();
        ops::set_rows_into_slots(s, ops::f32_rows(sb, T, n, 2, stride), ops::i32_vector(pb, T),
                                 ops::KvView{&strided, slots, n, type});
        ops::set_rows_into_slots(s, ops::f32_rows(rb, T, n), ops::i32_vector(pb, T), ops::KvView{&packed, slots, n, type});
        s.submit_and_wait();
        std::vector<uint8_t> got(bytes), want(bytes);
        strided.download(got.data(), bytes);
        packed.download(want.data(), bytes);
        EXPECT_EQ(got, want) << "cache type " << int(type);
        EXPECT_NE(got, std::vector<uint8_t>(bytes, 0)) << "nothing was written";
    }
}

// A Q8_0 cache: each row quantised in blocks of 32 (9 words: the fp16-valued scale as an f32
// word, then 32 int8 quants) as ggml's quantize_row_q8_0 does; cpu::round_activations(.., 32)
// gives the same values. Blocks of zeros, of one large value, and random ones.
TEST_F(SetRowsOp, QuantisesRowsIntoQ8_0Blocks) {
    const int64_t n = 96;  // three blocks per row
    const int slots = 5;
    const std::vector<int32_t> positions = {3, 4, 5};  // slots 3, 4, 0
    const int64_t T = int64_t(positions.size());
    auto src = test::random_floats(size_t(T * n), 7, -3.0f, 3.0f);
    std::fill_n(src.begin(), 32, 0.0f);  // a block of zeros: scale 0, quants 0
    src[40] = 1000.0f;                   // one dominant value in block 1 of row 0
    gpu::Buffer sb(ctx(), src.size() * 4, gpu::Memory::Device);
    sb.upload(src.data(), src.size() * 4);
    gpu::Buffer pb(ctx(), size_t(T) * 4, gpu::Memory::Host);
    std::memcpy(pb.mapped(), positions.data(), size_t(T) * 4);
    const size_t words = size_t(slots) * size_t(n / 32) * 9;
    std::vector<uint32_t> before(words, 0xdeadbeefu), got(words);
    gpu::Buffer db(ctx(), words * 4, gpu::Memory::Device);
    db.upload(before.data(), words * 4);
    gpu::Stream s(ctx());
    s.begin();
    ops::set_rows_into_slots(s, ops::f32_rows(sb, T, n), ops::i32_vector(pb, T), ops::KvView{&db, slots, n, KvCacheType::Q8_0});
    s.submit_and_wait();
    db.download(got.data(), words * 4);
    EXPECT_EQ(ops::cache_bytes(KvCacheType::Q8_0, uint64_t(n)), uint64_t(n / 32 * 36));

    int off_by_one = 0;
    for (int slot = 0; slot < slots; ++slot) {
        int64_t t = -1;
        for (int64_t i = 0; i < T; ++i)
            if (positions[size_t(i)] % slots == slot) t = i;
        const uint32_t* row = &got[size_t(slot) * size_t(n / 32) * 9];
        if (t < 0) {  // untouched
            for (int64_t w = 0; w < n / 32 * 9; ++w) ASSERT_EQ(row[w], 0xdeadbeefu) << "slot " << slot;
            continue;
        }
        std::vector<float> want(static_cast<size_t>(n));
        cpu::round_activations(&src[size_t(t * n)], want.data(), n, 32);
        for (int64_t b = 0; b < n / 32; ++b) {
            float d;
            std::memcpy(&d, &row[b * 9], 4);
            EXPECT_EQ(d, gguf::fp16_to_fp32(gguf::fp32_to_fp16(d))) << "the scale is an fp16 value";
            for (int64_t i = 0; i < 32; ++i) {
                const int q = int(int8_t(uint8_t(row[b * 9 + 1 + i / 4] >> (8 * (i % 4)))));
                const float have = d * float(q), w = want[size_t(b * 32 + i)];
                // The GPU's division may differ from the host's by an ulp: one quant step at most, rarely.
                ASSERT_LE(std::fabs(have - w), d * 1.001f + 1e-30f) << "slot " << slot << " block " << b << " value " << i;
                off_by_one += have != w;
            }
        }
    }
    EXPECT_LE(off_by_one, 2);
}

TEST_F(SetRowsOp, RefusesBadArguments) {
    gpu::Buffer src(ctx(), 64, gpu::Memory::Device), pos(ctx(), 8, gpu::Memory::Host), dst(ctx(), 64, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    auto set = [&](int64_t rows, int64_t n, int64_t slots, KvCacheType type = KvCacheType::F32) {
        ops::set_rows_into_slots(s, ops::f32_rows(src, rows, n), ops::i32_vector(pos, rows),
                                 ops::KvView{&dst, slots, n, type});
    };
    EXPECT_THROW(set(1, 0, 2), ops::ShapeError);
    EXPECT_THROW(set(1, 4, 0), ops::ShapeError);
    EXPECT_THROW(set(1, 4, 5), ops::ShapeError);   // dst holds 4 rows
    EXPECT_THROW(set(3, 8, 2), ops::ShapeError);   // src holds 2 rows
    EXPECT_THROW(set(1, 8, 1, KvCacheType::Q8_0), ops::ShapeError);  // 8 % 32
    EXPECT_THROW(ops::set_rows_into_slots(s, ops::f32_rows(src, 1, 4), ops::i32_vector(pos, 2),
                                          ops::KvView{&dst, 2, 4, KvCacheType::F32}),
                 ops::ShapeError);  // two positions for one row
    EXPECT_THROW(ops::set_rows_into_slots(s, ops::f32_rows(src, 1, 4), ops::i32_vector(pos, 1),
                                          ops::KvView{&dst, 2, 8, KvCacheType::F32}),
                 ops::ShapeError);  // rows of 4 into a cache of rows of 8
    s.submit_and_wait();
}

}  // namespace
}  // namespace vkllm
