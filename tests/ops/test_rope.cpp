// rope on the GPU against the CPU reference: both pairings, partial rotation, linear and YaRN
// scaling, frequency factors, and heads inside a wider row (token_stride, offsets); rope_into,
// rope_into_slots and rope_qkv_into_slots against rope in place.
#include <gtest/gtest.h>

#include <cmath>

#include <string>
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

struct Case {
    std::string name;
    int n_heads, head_dim;
    ops::RopeParams p;
    bool freq_factors = false;
    int max_pos = 100;
    double tolerance = 1e-10;
};

cpu::RopeParams to_reference(const ops::RopeParams& p, const float* freq_factors) {
    cpu::RopeParams r;
    r.n_dims = p.n_dims;
    r.neox = p.neox;
    r.freq_base = p.freq_base;
    r.freq_scale = p.freq_scale;
    r.scaling = p.ext_factor != 0.0f ? cpu::RopeParams::Yarn : cpu::RopeParams::Linear;
    r.ext_factor = p.ext_factor;
    r.attn_factor = p.attn_factor;
    r.beta_fast = p.beta_fast;
    r.beta_slow = p.beta_slow;
    r.orig_ctx = p.n_ctx_orig;
    r.freq_factors = freq_factors;
    return r;
}

class Rope : public test::GpuTest {
protected:
    // Rotates a [n_tokens, n_heads, head_dim] block that sits at `offset` inside rows of
    // `token_stride` floats, and checks it against the reference and that nothing else moved.
    void check(const Case& c, int64_t n_tokens, int64_t token_stride, uint64_t offset) {
        SCOPED_TRACE(c.name + " n_tokens " + std::to_string(n_tokens));
        const int64_t row = int64_t(c.n_heads) * c.head_dim;
        if (token_stride == 0) token_stride = row;
        const size_t total = size_t(offset + n_tokens * token_stride);
        auto buf = test::random_floats(total, uint32_t(n_tokens * 13 + c.head_dim));
        std::vector<int32_t> pos(static_cast<size_t>(n_tokens));
        for (int64_t t = 0; t < n_tokens; ++t) pos[size_t(t)] = int32_t((t * 7919 + 3) % (c.max_pos + 1));
        std::vector<float> factors;
        if (c.freq_factors) factors = cpu::llama3_freq_factors(c.p.n_dims, c.p.freq_base, 8.0f, 1.0f, 4.0f, 8192);

        // Reference: gather the heads, rotate, scatter back.
        std::vector<float> heads(size_t(n_tokens * row));
        for (int64_t t = 0; t < n_tokens; ++t)
            std::copy_n(buf.begin() + long(offset + t * token_stride), row, heads.begin() + long(t * row));
        const cpu::RopeParams rp = to_reference(c.p, c.freq_factors ? factors.data() : nullptr);
        cpu::rope(heads.data(), n_tokens, c.n_heads, c.head_dim, pos.data(), rp);
        std::vector<float> expect = buf;
        for (int64_t t = 0; t < n_tokens; ++t)
            std::copy_n(heads.begin() + long(t * row), row, expect.begin() + long(offset + t * token_stride));

        gpu::Buffer xb(ctx(), total * 4, gpu::Memory::Device), pb(ctx(), pos.size() * 4, gpu::Memory::Device);
        gpu::Buffer fb(ctx(), std::max<size_t>(factors.size(), 1) * 4, gpu::Memory::Device);
        xb.upload(buf.data(), total * 4);
        pb.upload(pos.data(), pos.size() * 4);
        if (!factors.empty()) fb.upload(factors.data(), factors.size() * 4);
        gpu::Stream s(ctx());
        s.begin();
        ops::rope(s, ops::f32_rows(xb, n_tokens, row, uint64_t(offset), token_stride), c.n_heads,
                  ops::i32_vector(pb, n_tokens), c.p, c.freq_factors ? &fb : nullptr);
        s.submit_and_wait();
        std::vector<float> got(total);
        xb.download(got.data(), total * 4);
        EXPECT_LT(test::nmse(got, expect), c.tolerance);
        // Outside the rotated dims the values are bit-identical.
        for (size_t i = 0; i < total; ++i) {
            const bool inside = i >= offset && (i - offset) % size_t(token_stride) < size_t(row) &&
                                (i - offset) % size_t(token_stride) % size_t(c.head_dim) < size_t(c.p.n_dims);
            if (!inside) {
                ASSERT_EQ(got[i], buf[i]) << "element " << i << " is outside the rotation";
            }
        }
    }
};

std::vector<Case> cases() {
    std::vector<Case> v;
    ops::RopeParams p;
    p.n_dims = 64;
    v.push_back({"normal", 4, 64, p});
    p.neox = true;
    v.push_back({"neox", 4, 64, p});
    p.n_dims = 32;  // Phi-2 style partial rotation of an 80-wide head
    v.push_back({"neox partial", 3, 80, p});
    p.neox = false;
    v.push_back({"normal partial", 3, 80, p});
    p = {};
    p.n_dims = 128;
    p.freq_base = 500000.0f;
    v.push_back({"llama3 freq_factors", 2, 128, p, true, 3000, 1e-8});
    p = {};
    p.n_dims = 8;
    p.freq_scale = 0.25f;
    v.push_back({"linear scale, head_dim 8", 5, 8, p});
    p = {};
    p.n_dims = 64;
    p.neox = true;
    p.freq_scale = 0.25f;
    p.ext_factor = 1.0f;
    p.attn_factor = 0.9f;
    p.n_ctx_orig = 4096;
    p.freq_base = 1000000.0f;
    v.push_back({"yarn", 4, 64, p, false, 12000, 1e-7});
    return v;
}

TEST_F(Rope, MatchesReferenceContiguous) {
    for (const Case& c : cases())
        for (int64_t n_tokens : {1, 3, 17, 64}) check(c, n_tokens, 0, 0);
}

TEST_F(Rope, RotatesHeadsInsideWiderRowsAtAnOffset) {
    // The K part of a fused QKV row: [n_tokens, (n_head + 2 n_head_kv) * head_dim], K after Q.
    for (const Case& c : cases()) {
        const int64_t row = int64_t(c.n_heads) * c.head_dim;
        check(c, 17, 3 * row + 4, uint64_t(row + 1));
    }
}

// RoPE fused with the KV-cache write: the rotated rows land in slots positions % slots (a ring
// that wraps inside the batch here), the unrotated dims copied, other slots and x untouched.
TEST_F(Rope, IntoSlotsWritesRotatedRowsToTheirCacheSlots) {
    for (const Case& c : cases()) {
        for (int64_t n_tokens : {1, 5}) {
            SCOPED_TRACE(c.name + " n_tokens " + std::to_string(n_tokens));
            const int slots = 7;
            const int64_t row = int64_t(c.n_heads) * c.head_dim;
            auto x = test::random_floats(size_t(n_tokens * row), uint32_t(n_tokens + c.head_dim));
            auto cache = test::random_floats(size_t(slots * row), 99);
            std::vector<int32_t> pos(static_cast<size_t>(n_tokens));
            for (int64_t t = 0; t < n_tokens; ++t) pos[size_t(t)] = int32_t(5 + t);  // slots 5, 6, 0, 1, 2
            std::vector<float> factors;
            if (c.freq_factors) factors = cpu::llama3_freq_factors(c.p.n_dims, c.p.freq_base, 8.0f, 1.0f, 4.0f, 8192);

            std::vector<float> rotated = x;
            cpu::rope(rotated.data(), n_tokens, c.n_heads, c.head_dim, pos.data(),
                      to_reference(c.p, c.freq_factors ? factors.data() : nullptr));
            std::vector<float> expect = cache;
            for (int64_t t = 0; t < n_tokens; ++t)
                std::copy_n(rotated.begin() + long(t * row), row, expect.begin() + long((pos[size_t(t)] % slots) * row));

            gpu::Buffer xb(ctx(), x.size() * 4, gpu::Memory::Device), pb(ctx(), pos.size() * 4, gpu::Memory::Device);
            gpu::Buffer cb(ctx(), cache.size() * 4, gpu::Memory::Device);
            gpu::Buffer fb(ctx(), std::max<size_t>(factors.size(), 1) * 4, gpu::Memory::Device);
            xb.upload(x.data(), x.size() * 4);
            cb.upload(cache.data(), cache.size() * 4);
            pb.upload(pos.data(), pos.size() * 4);
            if (!factors.empty()) fb.upload(factors.data(), factors.size() * 4);
            gpu::Stream s(ctx());
            s.begin();
            ops::rope_into_slots(s, ops::f32_rows(xb, n_tokens, row), c.n_heads, ops::i32_vector(pb, n_tokens), c.p,
                                 c.freq_factors ? &fb : nullptr, ops::KvView{&cb, slots, row, KvCacheType::F32});
            s.submit_and_wait();
            std::vector<float> got(cache.size()), x_after(x.size());
            cb.download(got.data(), got.size() * 4);
            xb.download(x_after.data(), x_after.size() * 4);
            EXPECT_LT(test::nmse(got, expect), c.tolerance);
            EXPECT_EQ(x_after, x);
            for (int slot = 0; slot < slots; ++slot) {
                bool written = false;
                for (int32_t p : pos) written |= p % slots == slot;
                if (written) continue;
                for (int64_t i = 0; i < row; ++i)
                    ASSERT_EQ(got[size_t(slot * row + i)], cache[size_t(slot * row + i)]) << "slot " << slot;
            }
            // Unrotated dims are copied bit for bit.
            for (int64_t t = 0; t < n_tokens; ++t)
                for (int h = 0; h < c.n_heads; ++h)
                    for (int d = c.p.n_dims; d < c.head_dim; ++d)
                        ASSERT_EQ(got[size_t((pos[size_t(t)] % slots) * row + h * c.head_dim + d)],
                                  x[size_t(t * row + h * c.head_dim + d)]);

            // Into an f16 cache: each value is the f32 result rounded to fp16 (within one fp16
            // step of the reference's rounding, as the f32 results differ by float rounding),
            // unrotated dims rounded exactly, other slots untouched.
            if (!ctx().caps().storage_16bit) continue;
            std::vector<uint16_t> cache16(cache.size()), got16(cache.size());
            for (size_t i = 0; i < cache.size(); ++i) cache16[i] = gguf::fp32_to_fp16(cache[i]);
            gpu::Buffer hb(ctx(), cache16.size() * 2, gpu::Memory::Device);
            hb.upload(cache16.data(), cache16.size() * 2);
            s.begin();
            ops::rope_into_slots(s, ops::f32_rows(xb, n_tokens, row), c.n_heads, ops::i32_vector(pb, n_tokens), c.p,
                                 c.freq_factors ? &fb : nullptr, ops::KvView{&hb, slots, row, KvCacheType::F16});
            s.submit_and_wait();
            hb.download(got16.data(), got16.size() * 2);
            for (int slot = 0; slot < slots; ++slot)
                for (int64_t i = 0; i < row; ++i) {
                    const size_t at = size_t(slot * row + i);
                    const float want = gguf::fp16_to_fp32(gguf::fp32_to_fp16(expect[at]));
                    const float have = gguf::fp16_to_fp32(got16[at]);
                    ASSERT_LE(std::fabs(have - want), std::fabs(want) * 1e-3f + 1e-6f) << "f16 slot " << slot << " dim " << i;
                }
            for (int64_t t = 0; t < n_tokens; ++t)
                for (int h = 0; h < c.n_heads; ++h)
                    for (int d = c.p.n_dims; d < c.head_dim; ++d)
                        ASSERT_EQ(got16[size_t((pos[size_t(t)] % slots) * row + h * c.head_dim + d)],
                                  gguf::fp32_to_fp16(x[size_t(t * row + h * c.head_dim + d)]));
        }
    }
}

// Decode's one-dispatch form (rope_qkv_into_slots) gives exactly what its three ops give: q
// rotated in place, k rotated into its cache slots, v copied into its own, for every case (both
// pairings, partial rotation, YaRN, frequency factors), grouped-query heads, a v row of another
// width, positions that wrap the slots, f32 and f16 caches; k and v are left as they were.
TEST_F(Rope, QkvIntoSlotsEqualsRopeRopeIntoSlotsAndSetRows) {
    gpu::Stream s(ctx());
    for (const Case& c : cases()) {
        const int n_heads_kv = c.n_heads % 2 == 0 ? c.n_heads / 2 : c.n_heads;
        const int64_t q_row = int64_t(c.n_heads) * c.head_dim, k_row = int64_t(n_heads_kv) * c.head_dim;
        const int64_t v_row = int64_t(n_heads_kv) * (c.head_dim + 4);
        for (int64_t n_tokens : {1, 5}) {
            for (KvCacheType type : {KvCacheType::F32, KvCacheType::F16}) {
                if (type == KvCacheType::F16 && !ctx().caps().storage_16bit) continue;
                SCOPED_TRACE(c.name + " n_tokens " + std::to_string(n_tokens) + (type == KvCacheType::F16 ? " f16" : " f32"));
                const int slots = 7;
                const uint64_t es = type == KvCacheType::F16 ? 2 : 4;
                auto q = test::random_floats(size_t(n_tokens * q_row), uint32_t(n_tokens + 1));
                auto k = test::random_floats(size_t(n_tokens * k_row), uint32_t(n_tokens + 2));
                auto v = test::random_floats(size_t(n_tokens * v_row), uint32_t(n_tokens + 3));
                std::vector<int32_t> pos(static_cast<size_t>(n_tokens));
                for (int64_t t = 0; t < n_tokens; ++t) pos[size_t(t)] = int32_t(5 + t);  // slots 5, 6, 0, 1, 2
                std::vector<float> factors;
                if (c.freq_factors) factors = cpu::llama3_freq_factors(c.p.n_dims, c.p.freq_base, 8.0f, 1.0f, 4.0f, 8192);
                const auto sentinel = test::random_floats(size_t(slots * std::max(k_row, v_row)), 77);

                auto buffer = [&](const void* data, size_t bytes) {
                    gpu::Buffer b(ctx(), std::max<size_t>(bytes, 4), gpu::Memory::Device);
                    if (bytes) b.upload(data, bytes);
                    return b;
                };
                std::vector<uint16_t> sentinel16(sentinel.size());
                for (size_t i = 0; i < sentinel.size(); ++i) sentinel16[i] = gguf::fp32_to_fp16(sentinel[i]);
                const void* init = type == KvCacheType::F16 ? static_cast<const void*>(sentinel16.data()) : sentinel.data();
                gpu::Buffer pb = buffer(pos.data(), pos.size() * 4), fb = buffer(factors.data(), factors.size() * 4);
                gpu::Buffer kb = buffer(k.data(), k.size() * 4), vb = buffer(v.data(), v.size() * 4);
                gpu::Buffer q3 = buffer(q.data(), q.size() * 4), q1 = buffer(q.data(), q.size() * 4);
                gpu::Buffer kc3 = buffer(init, size_t(slots * k_row) * es), vc3 = buffer(init, size_t(slots * v_row) * es);
                gpu::Buffer kc1 = buffer(init, size_t(slots * k_row) * es), vc1 = buffer(init, size_t(slots * v_row) * es);
                const gpu::Buffer* ff = c.freq_factors ? &fb : nullptr;

                s.begin();
                const ops::TensorView positions = ops::i32_vector(pb, n_tokens);
                const ops::TensorView k_view = ops::f32_rows(kb, n_tokens, k_row), v_view = ops::f32_rows(vb, n_tokens, v_row);
                ops::rope(s, ops::f32_rows(q3, n_tokens, q_row), c.n_heads, positions, c.p, ff);
                ops::rope_into_slots(s, k_view, n_heads_kv, positions, c.p, ff, ops::KvView{&kc3, slots, k_row, type});
                ops::set_rows_into_slots(s, v_view, positions, ops::KvView{&vc3, slots, v_row, type});
                s.barrier("rope's x binding is writable (in place), so k counts as written");
                ops::rope_qkv_into_slots(s, ops::f32_rows(q1, n_tokens, q_row), c.n_heads, k_view, n_heads_kv, v_view,
                                         positions, c.p, ff, ops::KvView{&kc1, slots, k_row, type},
                                         ops::KvView{&vc1, slots, v_row, type});
                s.submit_and_wait();
                auto bytes_of = [](const gpu::Buffer& b) {
                    std::vector<uint8_t> out(b.size());
                    b.download(out.data(), out.size());
                    return out;
                };
                EXPECT_EQ(bytes_of(q1), bytes_of(q3)) << "q";
                EXPECT_EQ(bytes_of(kc1), bytes_of(kc3)) << "k cache";
                EXPECT_EQ(bytes_of(vc1), bytes_of(vc3)) << "v cache";
                std::vector<float> k_after(k.size()), v_after(v.size());
                kb.download(k_after.data(), k_after.size() * 4);
                vb.download(v_after.data(), v_after.size() * 4);
                EXPECT_EQ(k_after, k);
                EXPECT_EQ(v_after, v);
            }
        }
    }
    s.begin();
    gpu::Buffer b(ctx(), 4096, gpu::Memory::Device);
    ops::RopeParams p;
    p.n_dims = 8;
    auto qkv = [&](int n_heads_kv, KvCacheType type, int64_t v_cache_row = 16) {
        const ops::TensorView x = ops::f32_rows(b, 1, 16);
        ops::rope_qkv_into_slots(s, x, 2, x, n_heads_kv, x, ops::i32_vector(b, 1), p, nullptr,
                                 ops::KvView{&b, 4, 16, type}, ops::KvView{&b, 4, v_cache_row, type});
    };
    EXPECT_THROW(qkv(2, KvCacheType::Q8_0), ops::ShapeError);
    EXPECT_THROW(qkv(0, KvCacheType::F32), ops::ShapeError);
    EXPECT_THROW(qkv(2, KvCacheType::F32, 8), ops::ShapeError);  // a v cache row of 8 for v rows of 16
}

// The rotated dims written into other rows (MLA's q_rope into the attention queries' [q_abs |
// q_rope] rows): each head's n_dims values equal, bit for bit, what rope leaves in place there
// (read from a window inside a wider row, as MLA's projected heads are), at `at` inside y's
// heads of y_head (rows strided); x unchanged and the rest of y untouched.
TEST_F(Rope, IntoRowsWritesTheRotatedDimsOnly) {
    for (const Case& c : cases()) {
        for (int64_t n_tokens : {1, 5}) {
            SCOPED_TRACE(c.name + " n_tokens " + std::to_string(n_tokens));
            const int64_t row = int64_t(c.n_heads) * c.head_dim, x0 = 3, xs = row + 5;
            const int at = 7, y_head = at + c.p.n_dims + 2;
            const int64_t y0 = 2, ys = int64_t(c.n_heads) * y_head + 3;
            const auto x = test::random_floats(size_t(x0 + n_tokens * xs), uint32_t(n_tokens + c.head_dim));
            const std::vector<float> y_init(size_t(y0 + n_tokens * ys), -5.5f);
            std::vector<int32_t> pos(static_cast<size_t>(n_tokens));
            for (int64_t t = 0; t < n_tokens; ++t) pos[size_t(t)] = int32_t((t * 37 + 11) % c.max_pos);
            std::vector<float> ff(size_t(c.p.n_dims / 2));
            for (size_t i = 0; i < ff.size(); ++i) ff[i] = 1.0f + 0.25f * float(i % 7);
            gpu::Buffer xb = test::upload(ctx(), x), in_place = test::upload(ctx(), x), yb = test::upload(ctx(), y_init);
            gpu::Buffer pb = test::upload(ctx(), pos), fb = test::upload(ctx(), ff);
            const gpu::Buffer* freqs = c.freq_factors ? &fb : nullptr;
            gpu::Stream s(ctx());
            s.begin();
            const ops::TensorView positions = ops::i32_vector(pb, n_tokens);
            ops::rope_into(s, ops::f32_rows(xb, n_tokens, row, uint64_t(x0), xs), c.n_heads, positions, c.p, freqs,
                           ops::f32_rows(yb, n_tokens, int64_t(c.n_heads) * y_head, uint64_t(y0), ys), at);
            ops::rope(s, ops::f32_rows(in_place, n_tokens, row, uint64_t(x0), xs), c.n_heads, positions, c.p, freqs);
            s.submit_and_wait();
            const auto y = test::download<float>(yb, y_init.size()), want = test::download<float>(in_place, x.size());
            EXPECT_EQ(test::download<float>(xb, x.size()), x) << "x changed";
            std::vector<bool> written(y.size(), false);
            for (int64_t t = 0; t < n_tokens; ++t)
                for (int h = 0; h < c.n_heads; ++h)
                    for (int d = 0; d < c.p.n_dims; ++d) {
                        const size_t yi = size_t(y0 + t * ys + h * y_head + at + d);
                        const size_t xi = size_t(x0 + t * xs + h * c.head_dim + d);
                        ASSERT_EQ(y[yi], want[xi]) << "token " << t << " head " << h << " dim " << d;
                        written[yi] = true;
                    }
            for (size_t i = 0; i < y.size(); ++i) {
                if (!written[i]) {
                    ASSERT_EQ(y[i], -5.5f) << "y[" << i << "] outside the rotated dims changed";
                }
            }
        }
    }
}

TEST_F(Rope, BadParametersAreClearErrors) {
    gpu::Buffer xb(ctx(), 1024, gpu::Memory::Device), pb(ctx(), 64, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    ops::RopeParams p;
    p.n_dims = 7;  // odd
    EXPECT_THROW(ops::rope(s, ops::f32_rows(xb, 2, 16), 2, ops::i32_vector(pb, 2), p), ops::ShapeError);
    p.n_dims = 16;  // > head_dim
    EXPECT_THROW(ops::rope(s, ops::f32_rows(xb, 2, 16), 2, ops::i32_vector(pb, 2), p), ops::ShapeError);
    p.n_dims = 8;
    p.ext_factor = 1.0f;  // YaRN without n_ctx_orig
    EXPECT_THROW(ops::rope(s, ops::f32_rows(xb, 2, 16), 2, ops::i32_vector(pb, 2), p), ops::ShapeError);
    p.ext_factor = 0.0f;
    EXPECT_THROW(ops::rope(s, ops::f32_rows(xb, 100, 16), 2, ops::i32_vector(pb, 16), p), ops::ShapeError);  // x too small
    EXPECT_THROW(ops::rope(s, ops::f32_rows(xb, 2, 15), 2, ops::i32_vector(pb, 2), p), ops::ShapeError);  // 15 in 2 heads
    EXPECT_THROW(ops::rope(s, ops::f32_rows(xb, 2, 16), 2, ops::i32_vector(pb, 3), p), ops::ShapeError);  // 3 positions
    gpu::Buffer yb(ctx(), 1024, gpu::Memory::Device);
    const ops::TensorView x = ops::f32_rows(xb, 2, 16), pos = ops::i32_vector(pb, 2);
    EXPECT_NO_THROW(ops::rope_into(s, x, 2, pos, p, nullptr, ops::f32_rows(yb, 2, 20), 2));
    EXPECT_THROW(ops::rope_into(s, x, 2, pos, p, nullptr, ops::f32_rows(yb, 2, 20), 3), ops::ShapeError);  // 3 + 8 > 10
    EXPECT_THROW(ops::rope_into(s, x, 2, pos, p, nullptr, ops::f32_rows(yb, 3, 20), 0), ops::ShapeError);  // 3 rows
    EXPECT_THROW(ops::rope_into(s, x, 2, pos, p, nullptr, ops::f32_rows(yb, 2, 21), 0), ops::ShapeError);  // 21 in 2 heads
    EXPECT_THROW(ops::rope_into(s, x, 2, pos, p, nullptr, ops::f32_rows(xb, 2, 20, 10), 0), ops::ShapeError);  // y over x
    s.submit_and_wait();
}

}  // namespace
}  // namespace vkllm
