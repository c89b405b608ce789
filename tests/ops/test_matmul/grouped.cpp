// Grouped blocks (ops::group_blocks, dequant.glsl's W_ALIGNED): Q4_0, Q8_0 and Q6_K rows whose
// blocks are stored as 8 scales and then 8 aligned payloads give every weight op the floats the
// file's block order gives, bit for bit (the same arithmetic on the same values, read from other
// addresses): the one-token matvec (float x, x rounded in the shader, x quantized beforehand with
// float and integer dots), the gated pair, the few-token and tiled matmuls, get_rows and the
// expert matvec and grouped matmul. The grouped weight sits at a 16-byte but not 256-byte
// boundary, so a binding window starts before it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "gguf/quant.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/ops.h"
#include "../op_test_data.h"
#include "bit_equal.h"
#include "test_support.h"
#include "test_weight.h"

namespace vkllm {
namespace {

using test::expect_bit_equal;
using gguf::TensorType;
using test::download;
using test::upload;

constexpr uint64_t kGroupedOffset = 272;  // 16 x 17

// The types that group, each with the shortest row that groups (8 blocks).
struct Groupable {
    TensorType type;
    int64_t n_in;
};
constexpr Groupable kGroupable[] = {{TensorType::Q4_0, 256}, {TensorType::Q8_0, 256}, {TensorType::Q6_K, 2048}};

std::string name_of(TensorType t) { return gguf::type_traits(t)->name; }


TEST(GroupedBlocks, RearrangeEachGroupOfEightAndBack) {
    for (const auto& [t, shortest] : kGroupable) {
        const int64_t n_in = 2 * shortest, n_rows = 3;
        const auto values = test::random_floats(size_t(n_in * n_rows), 3);
        const std::vector<uint8_t> bytes = gguf::quantize(t, values.data(), values.size());
        std::vector<uint8_t> grouped(bytes.size()), back(bytes.size());
        ops::group_blocks(t, n_in, n_rows, bytes.data(), grouped.data());
        ops::ungroup_blocks(t, n_in, n_rows, grouped.data(), back.data());
        EXPECT_EQ(back, bytes) << name_of(t);
        EXPECT_NE(grouped, bytes) << name_of(t);
        // Block 9 of row 1 (group 1, place 1): its scale and its quants where grouped_block_place says.
        const uint64_t bb = gguf::type_traits(t)->type_size;
        const uint64_t row = uint64_t(n_in / gguf::type_traits(t)->block_size) * bb;
        const ops::GroupedBlockPlace place = ops::grouped_block_place(t, 9);
        EXPECT_EQ(place.scale, 8 * bb + 2);
        EXPECT_EQ(place.quants, 8 * bb + 16 + (bb - 2));
        EXPECT_EQ(place.scale_in_block, t == TensorType::Q6_K ? 208u : 0u);
        const uint8_t* block = bytes.data() + row + 9 * bb;
        const uint64_t s = place.scale_in_block;
        std::vector<uint8_t> payload(block, block + s);  // the block without its scale, in order
        payload.insert(payload.end(), block + s + 2, block + bb);
        EXPECT_EQ(0, std::memcmp(grouped.data() + row + place.scale, block + s, 2)) << name_of(t);
        EXPECT_EQ(0, std::memcmp(grouped.data() + row + place.quants, payload.data(), bb - 2)) << name_of(t);
    }
    EXPECT_TRUE(ops::can_group_blocks(TensorType::Q6_K, 2048));
    EXPECT_FALSE(ops::can_group_blocks(TensorType::Q6_K, 1024));
    EXPECT_TRUE(ops::can_group_blocks(TensorType::Q8_0, 256));
    EXPECT_FALSE(ops::can_group_blocks(TensorType::Q8_0, 96)) << "8 blocks of 32 per group";
    EXPECT_FALSE(ops::can_group_blocks(TensorType::Q4_K, 256));
    std::vector<uint8_t> dst(1024);
    EXPECT_THROW(ops::group_blocks(TensorType::Q4_0, 96, 1, dst.data(), dst.data() + 512), std::invalid_argument);
    EXPECT_THROW(ops::grouped_block_place(TensorType::Q4_K, 0), std::invalid_argument);
    // GPUs group on upload, a CPU driver does not, unless VKLLM_GROUPED_BLOCKS says.
    gpu::Capabilities gpu_caps, cpu_caps;
    gpu_caps.type = "discrete";
    cpu_caps.type = "cpu";
    EXPECT_TRUE(ops::group_blocks_on_upload(gpu_caps));
    EXPECT_FALSE(ops::group_blocks_on_upload(cpu_caps));
    {
        test::ScopedEnv off("VKLLM_GROUPED_BLOCKS", "0");
        EXPECT_FALSE(ops::group_blocks_on_upload(gpu_caps));
    }
    {
        test::ScopedEnv on("VKLLM_GROUPED_BLOCKS", "1");
        EXPECT_TRUE(ops::group_blocks_on_upload(cpu_caps));
    }
    test::ScopedEnv bad("VKLLM_GROUPED_BLOCKS", "yes");
    EXPECT_THROW(ops::group_blocks_on_upload(gpu_caps), std::invalid_argument);
}

class GroupedOps : public test::GpuTest {
protected:
    // The same rows in the file's order (plain) and grouped in another buffer at kGroupedOffset.
    struct Both {
        test::TestWeight plain;
        gpu::Buffer buffer;
        ops::Weight grouped;
    };
    Both both(TensorType t, int64_t n_in, int64_t n_out, uint32_t seed) {
        Both b{test::make_weight(ctx(), t, n_in, n_out, seed), {}, {}};
        std::vector<uint8_t> g(b.plain.bytes.size());
        ops::group_blocks(t, n_in, n_out, b.plain.bytes.data(), g.data());
        b.buffer = gpu::Buffer(ctx(), kGroupedOffset + ops::weight_buffer_bytes(t, n_in, n_out), gpu::Memory::Device);
        b.buffer.upload(g.data(), g.size(), kGroupedOffset);
        b.grouped = ops::Weight{t, &b.buffer, n_in, n_out, kGroupedOffset, true};
        return b;
    }

    std::vector<float> matmul(const ops::Weight& w, int64_t n_tokens, bool round_x) {
        const auto x = test::random_floats(size_t(n_tokens * w.n_in), uint32_t(n_tokens), -2.0f, 2.0f);
        gpu::Buffer xb = upload(ctx(), x), yb(ctx(), size_t(n_tokens * w.n_out) * 4, gpu::Memory::Device);
        gpu::Stream s(ctx());
        s.begin();
        ops::matmul(s, w, ops::f32_rows(xb, n_tokens, w.n_in), ops::f32_rows(yb, n_tokens, w.n_out),
                    /*accumulate=*/false, round_x);
        s.submit_and_wait();
        return download(yb);
    }

    // One token's x quantized as the weight type's matvec reads it, then matvec_quantized.
    std::vector<float> quantized_matvec(const ops::Weight& w) {
        const auto x = test::random_floats(size_t(w.n_in), 7, -2.0f, 2.0f);
        const ops::ActRounding mode = ops::activation_rounding(w.type);
        gpu::Buffer xb = upload(ctx(), x), yb(ctx(), size_t(w.n_out) * 4, gpu::Memory::Device);
        gpu::Buffer qb(ctx(), ops::quantized_acts(xb, mode, 1, w.n_in).bytes() + 64, gpu::Memory::Device);
        const ops::QuantizedActs q = ops::quantized_acts(qb, mode, 1, w.n_in);
        gpu::Stream s(ctx());
        s.begin();
        ops::quantize_activations(s, ops::f32_rows(xb, 1, w.n_in), q);
        s.barrier("x quantized before the matvec");
        ops::matvec_quantized(s, w, q, ops::f32_rows(yb, 1, w.n_out));
        s.submit_and_wait();
        return download(yb);
    }
};

TEST_F(GroupedOps, MatmulsEqualTheFileOrder) {
    for (const auto& [t, shortest] : kGroupable) {
        for (int64_t n_in : {shortest, 2 * shortest}) {
            const Both w = both(t, n_in, 33, uint32_t(n_in));
            for (int64_t tokens : {1, 5, 40}) {  // matvec, matvec_rows, the tiled matmul
                const std::string what = name_of(t) + " n_in " + std::to_string(n_in) + ", " + std::to_string(tokens) +
                                         " tokens";
                test::ScopedEnv fp32_kernels("VKLLM_COOPMAT", "0");
                expect_bit_equal(matmul(w.grouped, tokens, false), matmul(w.plain.gpu(), tokens, false), what);
            }
            if (ops::matvec_rounds_activations(t))
                expect_bit_equal(matmul(w.grouped, 1, true), matmul(w.plain.gpu(), 1, true), name_of(t) + " x rounded");
            // The device's own choice for a prompt: on NVIDIA the tensor-core kernel, which rounds
            // the same values to fp16 in the same tiles.
            expect_bit_equal(matmul(w.grouped, 40, false), matmul(w.plain.gpu(), 40, false), name_of(t) + " prompt");
        }
    }
}

// A binding limit far below the weight's size: row windows whose starts the binding alignment
// rounds down, so the rows sit at a shift inside each window (a multiple of 16 still).
TEST_F(GroupedOps, RowWindowsEqualTheFileOrder) {
    const Both w = both(TensorType::Q8_0, 256, 101, 8);
    const uint64_t align = std::max<uint64_t>(ctx().caps().min_storage_buffer_offset_alignment, 4);
    test::ScopedEnv env("VKLLM_MAX_BINDING_BYTES", std::to_string(2 * align + 16 + 5 * 272));
    test::ScopedEnv fp32_kernels("VKLLM_COOPMAT", "0");
    for (int64_t tokens : {1, 3, 20}) {
        expect_bit_equal(matmul(w.grouped, tokens, false), matmul(w.plain.gpu(), tokens, false),
                         "windows of about 5 rows, " + std::to_string(tokens) + " tokens");
    }
}

TEST_F(GroupedOps, QuantizedMatvecEqualsTheFileOrder) {
    for (const char* idot : {"0", "1"}) {  // the float dot, and the integer dot where the device has one
        test::ScopedEnv env("VKLLM_INTEGER_DOT", idot);
        for (const auto& [t, n_in] : kGroupable) {
            const Both w = both(t, n_in, 45, 5);
            expect_bit_equal(quantized_matvec(w.grouped), quantized_matvec(w.plain.gpu()),
                             name_of(t) + " VKLLM_INTEGER_DOT=" + idot);
        }
    }
}

// Gate and up grouped in one buffer (up 256 bytes past gate's end, rounded): the fused GLU matvec.
TEST_F(GroupedOps, GatedPairEqualsTheFileOrder) {
    for (const auto& [t, n_in] : kGroupable) {
        const int64_t n_out = 20;
        const test::TestWeight g = test::make_weight(ctx(), t, n_in, n_out, 1), u = test::make_weight(ctx(), t, n_in, n_out, 2);
        const uint64_t up_at = (g.bytes.size() + 255) / 256 * 256;
        std::vector<float> y[2];
        for (int grouped : {0, 1}) {
            gpu::Buffer pair(ctx(), up_at + ops::weight_buffer_bytes(t, n_in, n_out), gpu::Memory::Device);
            for (const auto& [w, at] : {std::pair{&g, uint64_t(0)}, std::pair{&u, up_at}}) {
                std::vector<uint8_t> bytes = w->bytes;
                if (grouped) ops::group_blocks(t, n_in, n_out, w->bytes.data(), bytes.data());
                pair.upload(bytes.data(), bytes.size(), at);
            }
            const ops::Weight gw{t, &pair, n_in, n_out, 0, grouped == 1}, uw{t, &pair, n_in, n_out, up_at, grouped == 1};
            ASSERT_TRUE(ops::matvec_swiglu_fits(ctx(), gw, uw));
            const auto x = test::random_floats(size_t(n_in), 9, -2.0f, 2.0f);
            gpu::Buffer xb = upload(ctx(), x), yb(ctx(), size_t(n_out) * 4, gpu::Memory::Device);
            gpu::Stream s(ctx());
            s.begin();
            ops::matvec_swiglu(s, gw, uw, ops::f32_rows(xb, 1, n_in), ops::f32_rows(yb, 1, n_out),
                               /*round_x=*/ops::matvec_rounds_activations(t));
            s.submit_and_wait();
            y[grouped] = download(yb);
        }
        expect_bit_equal(y[1], y[0], name_of(t) + " gate and up");
        // One grouped and one not: not one fused pair.
        const ops::Weight gw{t, &g.buffer, n_in, n_out, 0, true}, uw{t, &g.buffer, n_in, n_out, 0, false};
        EXPECT_FALSE(ops::matvec_swiglu_fits(ctx(), gw, uw));
    }
}

TEST_F(GroupedOps, GetRowsEqualsTheFileOrder) {
    for (const auto& [t, n_in] : kGroupable) {
        const Both w = both(t, n_in, 30, 4);
        const std::vector<int32_t> ids{3, 0, 29, 17, 3};
        std::vector<float> out[2];
        for (int grouped : {0, 1}) {
            gpu::Buffer ib = upload(ctx(), ids), ob(ctx(), ids.size() * size_t(n_in) * 4, gpu::Memory::Device);
            gpu::Stream s(ctx());
            s.begin();
            ops::get_rows(s, grouped ? w.grouped : w.plain.gpu(), ops::i32_vector(ib, int64_t(ids.size())),
                          ops::f32_rows(ob, int64_t(ids.size()), n_in));
            s.submit_and_wait();
            out[grouped] = download(ob);
        }
        expect_bit_equal(out[1], out[0], name_of(t) + " rows");
    }
}

// 4 experts of 24 rows (Q6_K rows of 2048): the expert matvec (no sort) and the grouped matmul over sorted pairs.
TEST_F(GroupedOps, ExpertsEqualTheFileOrder) {
    const int64_t n_out = 24, n_expert = 4, n_tokens = 9;
    const int top_k = 2;
    const int64_t n_pairs = n_tokens * top_k;
    for (const auto& [t, n_in] : kGroupable) {
        const auto values = test::random_floats(size_t(n_in * n_out * n_expert), 31);
        const std::vector<uint8_t> bytes = gguf::quantize(t, values.data(), values.size());
        std::vector<int32_t> ids;
        for (int64_t p = 0; p < n_pairs; ++p) ids.push_back(int32_t((p * 3 + p / 5) % n_expert));
        const auto x = test::random_floats(size_t(n_tokens * n_in), 32, -2.0f, 2.0f);
        for (bool sorted : {false, true}) {
            std::vector<float> y[2];
            for (int grouped : {0, 1}) {
                std::vector<uint8_t> b = bytes;
                if (grouped) ops::group_blocks(t, n_in, n_out * n_expert, bytes.data(), b.data());
                gpu::Buffer wb(ctx(), kGroupedOffset + ops::weight_buffer_bytes(t, n_in, n_out * n_expert),
                               gpu::Memory::Device);
                wb.upload(b.data(), b.size(), kGroupedOffset);
                ops::ExpertWeights w{t, &wb, n_in, n_out, n_expert};
                w.offset = kGroupedOffset;
                w.grouped = grouped == 1;
                gpu::Buffer ib = upload(ctx(), ids), xb = upload(ctx(), x);
                gpu::Buffer sb(ctx(), ops::moe_sort_ints(int(n_expert), n_pairs) * 4, gpu::Memory::Device);
                gpu::Buffer yb(ctx(), size_t(n_pairs * n_out) * 4, gpu::Memory::Device);
                const ops::MoeRouting r{&ib, nullptr, sorted ? &sb : nullptr, n_tokens, top_k};
                test::ScopedEnv fp32_kernels("VKLLM_COOPMAT", "0");
                gpu::Stream s(ctx());
                s.begin();
                if (sorted) {
                    ops::moe_sort(s, ops::i32_vector(ib, n_pairs), int(n_expert),
                                  ops::i32_vector(sb, int64_t(ops::moe_sort_ints(int(n_expert), n_pairs))));
                    s.barrier("the sort before the grouped matmul");
                }
                ops::moe_matmul(s, w, ops::f32_rows(xb, n_tokens, n_in), false, r, ops::f32_rows(yb, n_pairs, n_out));
                s.submit_and_wait();
                y[grouped] = download(yb);
            }
            expect_bit_equal(y[1], y[0], name_of(t) + (sorted ? " grouped matmul" : " expert matvec"));
        }
    }
}

// Q4_K and Q5_K blocks (144 and 176 bytes) are 16-byte aligned in the file's own order whenever
// the weight starts on a 16-byte boundary, and the shaders then read them with wide loads
// (W_ALIGNED): the same floats as from a weight 4 bytes off that boundary, bit for bit.
TEST_F(GroupedOps, AlignedKQuantsEqualUnaligned) {
    for (TensorType t : {TensorType::Q4_K, TensorType::Q5_K}) {
        const int64_t n_in = 512, n_out = 33;
        const test::TestWeight w = test::make_weight(ctx(), t, n_in, n_out, 12);
        gpu::Buffer b(ctx(), 512 + ops::weight_buffer_bytes(t, n_in, n_out), gpu::Memory::Device);
        b.upload(w.bytes.data(), w.bytes.size(), kGroupedOffset);
        gpu::Buffer c(ctx(), 512 + ops::weight_buffer_bytes(t, n_in, n_out), gpu::Memory::Device);
        c.upload(w.bytes.data(), w.bytes.size(), kGroupedOffset + 4);
        const ops::Weight aligned{t, &b, n_in, n_out, kGroupedOffset}, off{t, &c, n_in, n_out, kGroupedOffset + 4};
        test::ScopedEnv fp32_kernels("VKLLM_COOPMAT", "0");
        for (int64_t tokens : {1, 5, 40})
            expect_bit_equal(matmul(aligned, tokens, false), matmul(off, tokens, false),
                             name_of(t) + ", " + std::to_string(tokens) + " tokens");
        for (const char* idot : {"0", "1"}) {
            test::ScopedEnv env("VKLLM_INTEGER_DOT", idot);
            expect_bit_equal(quantized_matvec(aligned), quantized_matvec(off),
                             name_of(t) + " x quantized, VKLLM_INTEGER_DOT=" + idot);
        }
    }
}

// A weight that says it is grouped must be one that can be: a clear error otherwise.
TEST_F(GroupedOps, RefusesWeightsThatCannotBeGrouped) {
    const test::TestWeight k = test::make_weight(ctx(), TensorType::Q4_K, 256, 4, 1);
    const test::TestWeight q = test::make_weight(ctx(), TensorType::Q8_0, 96, 4, 1);
    gpu::Buffer xb(ctx(), 256 * 4, gpu::Memory::Device), yb(ctx(), 64, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    for (const ops::Weight& w : {ops::Weight{TensorType::Q4_K, &k.buffer, 256, 4, 0, true},
                                 ops::Weight{TensorType::Q8_0, &q.buffer, 96, 4, 0, true}}) {
        try {
            ops::matmul(s, w, ops::f32_rows(xb, 1, w.n_in), ops::f32_rows(yb, 1, 4));
            FAIL() << "a grouped " << name_of(w.type) << " weight of rows of " << w.n_in << " was taken";
        } catch (const ops::ShapeError& e) {
            EXPECT_NE(std::string(e.what()).find("grouped blocks"), std::string::npos) << e.what();
        }
    }
    const Both w = both(TensorType::Q8_0, 256, 4, 1);
    ops::Weight off = w.grouped;
    off.offset = kGroupedOffset - 4;  // word-aligned, not 16-byte aligned
    try {
        ops::matmul(s, off, ops::f32_rows(xb, 1, 256), ops::f32_rows(yb, 1, 4));
        FAIL() << "a grouped weight at offset " << off.offset << " was taken";
    } catch (const ops::ShapeError& e) {
        EXPECT_NE(std::string(e.what()).find("16-byte boundary"), std::string::npos) << e.what();
    }
    s.submit_and_wait();
}

}  // namespace
}  // namespace vkllm
