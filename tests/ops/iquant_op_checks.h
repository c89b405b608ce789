// Checks of a weight type on the GPU against the CPU reference (gguf::dequantize, cpu::matmul)
// on the same bytes, in every path a weight takes: get_rows, the decode matvec (plain and the
// fused SwiGLU), the tiled prefill matmul, and the experts' matrix-vector, fused SwiGLU and tiled
// products. Weights are random blocks (any quant bits, finite scales), so every code the format
// allows is decoded. Shapes are odd: rows that are no multiple of a workgroup's rows, several
// blocks per row, tokens for both matmul tiles, x at an offset that rules out vec4 loads.
// A test program includes this and instantiates IquantOps with its types (test_iquant_ops.cpp).
// Each pipeline is a cold lavapipe compile of seconds, so each type takes its own decoder's
// variants (get_rows, matvec, matmul), and the variants whose per-type code is that same decoder
// (fused SwiGLU, experts, the larger tile) run on one type per decoder file (all_variants).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
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
#include "test_weight.h"

namespace vkllm::test::iquant {

using gguf::TensorType;
using test::download;
using test::upload;

// A weight type checked here, and how to give its random blocks finite scales.
struct IquantType {
    TensorType type;
    // Byte offset of the block's f16 scale (random bytes there could be infinities or NaNs;
    // everywhere else any byte is a valid code), or kIq1mScale: IQ1_M's f16 spread over the top
    // nibbles of its four u16 scale words at byte 48.
    int scale_offset;
    // Also checks the variants whose per-type code is another's (the fused SwiGLU matvecs, the
    // expert products, the larger matmul tile): one type per include file of decoders.
    bool all_variants;
};
inline constexpr int kIq1mScale = -1;

inline std::string name_of(TensorType t) { return gguf::type_traits(t)->name; }
inline uint32_t block_elems(TensorType t) { return gguf::type_traits(t)->block_size; }

// Writes the f16 scale h into a block of t.
inline void set_block_scale(const IquantType& t, uint8_t* block, uint16_t h) {
    if (t.scale_offset == kIq1mScale) {
        for (int k = 0; k < 4; ++k) block[49 + 2 * k] = uint8_t((block[49 + 2 * k] & 0x0F) | ((h >> (4 * k)) & 0xF) << 4);
        return;
    }
    block[t.scale_offset] = uint8_t(h);
    block[t.scale_offset + 1] = uint8_t(h >> 8);
}

// n rows of n_in elements of random blocks with scales of magnitude 2^-9..2^-5 (either sign).
inline std::vector<uint8_t> random_weight_bytes(const IquantType& t, int64_t n_in, int64_t n, uint32_t seed) {
    const auto traits = *gguf::type_traits(t.type);
    const size_t blocks = size_t(n_in / traits.block_size * n);
    std::vector<uint8_t> bytes(blocks * traits.type_size);
    std::mt19937 rng(seed);
    for (uint8_t& b : bytes) b = uint8_t(rng());
    for (size_t i = 0; i < blocks; ++i) {
        const float mag = std::ldexp(1.0f + float(rng() % 1024) / 1024.0f, -9 + int(rng() % 5));
        set_block_scale(t, bytes.data() + i * traits.type_size, gguf::fp32_to_fp16(rng() % 2 ? mag : -mag));
    }
    return bytes;
}

// Row lengths: one block of 32 is too short to say much, so 3 or 5 blocks, and one super-block
// and three.
inline std::vector<int64_t> row_lengths(TensorType t) {
    return block_elems(t) == 32 ? std::vector<int64_t>{96, 160} : std::vector<int64_t>{256, 768};
}

using test::TestWeight;

inline TestWeight make_weight(gpu::Context& ctx, const IquantType& t, int64_t n_in, int64_t n_out, uint32_t seed) {
    return test::upload_weight(ctx, t.type, n_in, n_out, random_weight_bytes(t, n_in, n_out, seed));
}

class IquantOps : public test::GpuTest, public ::testing::WithParamInterface<IquantType> {};

// The CPU reference decodes these types, and the GPU takes them.
TEST_P(IquantOps, TypeIsDecodedOnBothSides) {
    const TensorType type = GetParam().type;
    ASSERT_TRUE(gguf::type_traits(type)->dequantizable) << name_of(type);
    EXPECT_TRUE(ops::gpu_supports(type)) << name_of(type);
    // A row that is not whole blocks is refused with the type named.
    gpu::Buffer b(ctx(), 4096, gpu::Memory::Device);
    gpu::Buffer x(ctx(), 4096, gpu::Memory::Device), y(ctx(), 64, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    const int64_t n_in = block_elems(type) + 16;
    try {
        ops::matmul(s, {type, &b, n_in, 2}, ops::f32_rows(x, 1, n_in), ops::f32_rows(y, 1, 2));
        ADD_FAILURE() << "a row of " << n_in << " elements was accepted";
    } catch (const ops::ShapeError& e) {
        EXPECT_NE(std::string(e.what()).find(name_of(type)), std::string::npos) << e.what();
    }
    s.submit_and_wait();
}

// get_rows: every row decodes as gguf::dequantize decodes it, bit for bit (the same float
// operations in the same order); ids outside the table give zero rows.
TEST_P(IquantOps, GetRowsEqualsDequantize) {
    const IquantType& t = GetParam();
    const int64_t n_in = row_lengths(t.type).back(), n_rows = 9;
    const TestWeight w = make_weight(ctx(), t, n_in, n_rows, 3);
    const std::vector<float> all = gguf::dequantize(t.type, w.bytes.data(), size_t(n_in * n_rows));
    const std::vector<int32_t> ids = {8, 0, 3, -1, 3, 9, 5};
    std::vector<float> ref(ids.size() * size_t(n_in), 0.0f);
    for (size_t i = 0; i < ids.size(); ++i)
        if (ids[i] >= 0 && ids[i] < n_rows)
            std::copy_n(all.begin() + ids[i] * n_in, n_in, ref.begin() + long(i) * n_in);
    gpu::Buffer ib = upload(ctx(), ids), out = upload(ctx(), std::vector<float>(ref.size(), 123.0f));
    gpu::Stream s(ctx());
    s.begin();
    ops::get_rows(s, w.gpu(), ops::i32_vector(ib, int64_t(ids.size())), ops::f32_rows(out, int64_t(ids.size()), n_in));
    s.submit_and_wait();
    EXPECT_EQ(download(out), ref) << name_of(t.type);
}

// matmul: one token (the decode matvec) and several (the tiled matmul: the smallest tile and a
// larger one, all_variants), rows that fill no workgroup evenly, x at an odd offset, accumulate into y.
TEST_P(IquantOps, MatmulMatchesTheReference) {
    const IquantType& t = GetParam();
    for (int64_t n_in : row_lengths(t.type))
        for (int64_t n_out : {int64_t(7), int64_t(37)}) {
            const TestWeight w = make_weight(ctx(), t, n_in, n_out, uint32_t(n_in + n_out));
            for (int64_t n_tokens : {int64_t(1), int64_t(5), int64_t(17)}) {
                if (n_tokens == 17 && !t.all_variants) continue;
                SCOPED_TRACE(name_of(t.type) + " n_in " + std::to_string(n_in) + " n_out " + std::to_string(n_out) +
                             " tokens " + std::to_string(n_tokens));
                const bool accumulate = n_out == 37;
                const auto x = test::random_floats(size_t(n_tokens * n_in + 3), uint32_t(n_tokens + n_in), -2, 2);
                const auto y0 = test::random_floats(size_t(n_tokens * n_out), uint32_t(n_out));
                std::vector<float> ref(size_t(n_tokens * n_out));
                cpu::matmul(w.cpu(), x.data() + 3, ref.data(), n_tokens);
                if (accumulate)
                    for (size_t i = 0; i < ref.size(); ++i) ref[i] += y0[i];
                gpu::Buffer xb = upload(ctx(), x), yb = upload(ctx(), y0);
                gpu::Stream s(ctx());
                s.begin();
                ops::matmul(s, w.gpu(), ops::f32_rows(xb, n_tokens, n_in, 3), ops::f32_rows(yb, n_tokens, n_out),
                            accumulate);
                s.submit_and_wait();
                EXPECT_LT(test::nmse(download(yb), ref), 1e-10);
            }
        }
}

// Decode's fused gate, up and SwiGLU equals the two matvecs and swiglu bit for bit, and the CPU.
TEST_P(IquantOps, FusedSwigluEqualsTheUnfusedPath) {
    const IquantType& t = GetParam();
    if (!t.all_variants) GTEST_SKIP() << "checked on another type";
    const int64_t n_in = row_lengths(t.type).front(), n_out = 21;
    const auto gate_bytes = random_weight_bytes(t, n_in, n_out, 1), up_bytes = random_weight_bytes(t, n_in, n_out, 2);
    const uint64_t up_offset = (gate_bytes.size() + 255) / 256 * 256;
    gpu::Buffer pair(ctx(), up_offset + ops::weight_buffer_bytes(t.type, n_in, n_out), gpu::Memory::Device);
    pair.upload(gate_bytes.data(), gate_bytes.size());
    pair.upload(up_bytes.data(), up_bytes.size(), up_offset);
    const ops::Weight gw{t.type, &pair, n_in, n_out, 0}, uw{t.type, &pair, n_in, n_out, up_offset};
    ASSERT_TRUE(ops::matvec_swiglu_fits(ctx(), gw, uw));

    const auto x = test::random_floats(size_t(n_in + 1), 7, -2, 2);  // x at offset 1
    std::vector<float> g(static_cast<size_t>(n_out)), u(g), ref(g);
    cpu::matmul({t.type, gate_bytes.data(), n_in, n_out}, x.data() + 1, g.data(), 1);
    cpu::matmul({t.type, up_bytes.data(), n_in, n_out}, x.data() + 1, u.data(), 1);
    for (size_t o = 0; o < ref.size(); ++o) ref[o] = g[o] / (1.0f + std::exp(-g[o])) * u[o];

    gpu::Buffer xb = upload(ctx(), x), fused(ctx(), size_t(n_out) * 4, gpu::Memory::Device);
    gpu::Buffer gy(ctx(), size_t(n_out) * 4, gpu::Memory::Device), uy(ctx(), size_t(n_out) * 4, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    const ops::TensorView xr = ops::f32_rows(xb, 1, n_in, 1), gr = ops::f32_rows(gy, 1, n_out);
    ops::matvec_swiglu(s, gw, uw, xr, ops::f32_rows(fused, 1, n_out));
    ops::matmul(s, gw, xr, gr);
    ops::matmul(s, uw, xr, ops::f32_rows(uy, 1, n_out));
    s.barrier("gate and up before swiglu");
    ops::swiglu(s, gr, ops::f32_rows(uy, 1, n_out), gr);
    s.submit_and_wait();
    const std::vector<float> got = download(fused);
    EXPECT_EQ(got, download(gy)) << name_of(t.type);
    EXPECT_LT(test::nmse(got, ref), 1e-7) << name_of(t.type);
}

// ---------------------------------------------------------------------------------------------
// Experts: a 3-D tensor {n_in, n_out, n_expert} of random blocks.

// Expert ids of n_tokens tokens, top_k distinct each (experts 3 and 6 of 8 get no pair).
inline std::vector<int32_t> routing(int64_t n_tokens, int top_k, uint32_t seed) {
    std::vector<int32_t> pool = {0, 1, 2, 4, 5, 7};
    std::mt19937 rng(seed);
    std::vector<int32_t> ids;
    for (int64_t t = 0; t < n_tokens; ++t) {
        std::shuffle(pool.begin(), pool.end(), rng);
        ids.insert(ids.end(), pool.begin(), pool.begin() + top_k);
    }
    return ids;
}

inline constexpr int64_t kExperts = 8;
inline constexpr int kTopK = 2;

// y[p] = W_{ids[p]} x[p / top_k] on the CPU.
inline std::vector<float> experts_ref(TensorType type, const std::vector<uint8_t>& bytes, int64_t n_in, int64_t n_out,
                               const float* x, const std::vector<int32_t>& ids) {
    const size_t expert_bytes = cpu::weight_row_bytes({type, bytes.data(), n_in, 1}) * size_t(n_out);
    std::vector<float> y(ids.size() * size_t(n_out));
    for (size_t p = 0; p < ids.size(); ++p)
        cpu::matmul({type, bytes.data() + size_t(ids[p]) * expert_bytes, n_in, n_out}, x + p / kTopK * size_t(n_in),
                    y.data() + p * size_t(n_out), 1);
    return y;
}

// moe_matmul: one token (a matrix-vector product per pair) and 17 (tiles over the sorted pairs).
TEST_P(IquantOps, ExpertMatmulMatchesTheReference) {
    const IquantType& t = GetParam();
    if (!t.all_variants) GTEST_SKIP() << "checked on another type";
    const int64_t n_in = row_lengths(t.type).back(), n_out = 13;
    const auto bytes = random_weight_bytes(t, n_in, n_out * kExperts, 5);
    gpu::Buffer wb(ctx(), ops::weight_buffer_bytes(t.type, n_in, n_out * kExperts), gpu::Memory::Device);
    wb.upload(bytes.data(), bytes.size());
    const ops::ExpertWeights w{t.type, &wb, n_in, n_out, kExperts};
    for (int64_t n_tokens : {int64_t(1), int64_t(17)}) {
        SCOPED_TRACE(name_of(t.type) + " tokens " + std::to_string(n_tokens));
        const std::vector<int32_t> ids = routing(n_tokens, kTopK, uint32_t(n_tokens));
        const int64_t n_pairs = int64_t(ids.size());
        const auto x = test::random_floats(size_t(n_tokens * n_in), uint32_t(n_tokens + 1), -2, 2);
        const auto ref = experts_ref(t.type, bytes, n_in, n_out, x.data(), ids);
        gpu::Buffer xb = upload(ctx(), x), ib = upload(ctx(), ids), yb(ctx(), ref.size() * 4, gpu::Memory::Device);
        const int64_t sort_ints = int64_t(ops::moe_sort_ints(int(kExperts), n_pairs));
        gpu::Buffer sb(ctx(), size_t(sort_ints) * 4, gpu::Memory::Device);
        const ops::MoeRouting r{&ib, nullptr, &sb, n_tokens, kTopK};
        gpu::Stream s(ctx());
        s.begin();
        ops::moe_sort(s, ops::i32_vector(ib, n_pairs), int(kExperts), ops::i32_vector(sb, sort_ints));
        s.barrier("the sorted pairs before the expert matmul");
        ops::moe_matmul(s, w, ops::f32_rows(xb, n_tokens, n_in), false, r, ops::f32_rows(yb, n_pairs, n_out));
        s.submit_and_wait();
        EXPECT_LT(test::nmse(download(yb), ref), 1e-10);
    }
}

// Decode's fused expert gate, up and SwiGLU equals two expert matvecs and swiglu, and the CPU.
TEST_P(IquantOps, ExpertFusedSwigluEqualsTheUnfusedPath) {
    const IquantType& t = GetParam();
    if (!t.all_variants) GTEST_SKIP() << "checked on another type";
    const int64_t n_in = row_lengths(t.type).front(), n_out = 11, n_tokens = 2;
    const auto gate = random_weight_bytes(t, n_in, n_out * kExperts, 8), up = random_weight_bytes(t, n_in, n_out * kExperts, 9);
    const uint64_t up_offset = (gate.size() + 255) / 256 * 256;
    gpu::Buffer wb(ctx(), up_offset + ops::weight_buffer_bytes(t.type, n_in, n_out * kExperts), gpu::Memory::Device);
    wb.upload(gate.data(), gate.size());
    wb.upload(up.data(), up.size(), up_offset);
    const ops::ExpertWeights gw{t.type, &wb, n_in, n_out, kExperts, nullptr, 0};
    const ops::ExpertWeights uw{t.type, &wb, n_in, n_out, kExperts, nullptr, up_offset};
    ASSERT_TRUE(ops::moe_matvec_swiglu_fits(ctx(), gw, uw));

    const std::vector<int32_t> ids = routing(n_tokens, kTopK, 4);
    const int64_t n_pairs = int64_t(ids.size());
    const auto x = test::random_floats(size_t(n_tokens * n_in), 12, -2, 2);
    const auto g = experts_ref(t.type, gate, n_in, n_out, x.data(), ids);
    const auto u = experts_ref(t.type, up, n_in, n_out, x.data(), ids);
    std::vector<float> ref(g.size());
    for (size_t i = 0; i < ref.size(); ++i) ref[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];

    const size_t n = ref.size();
    gpu::Buffer xb = upload(ctx(), x), ib = upload(ctx(), ids), fused(ctx(), n * 4, gpu::Memory::Device);
    gpu::Buffer gy(ctx(), n * 4, gpu::Memory::Device), uy(ctx(), n * 4, gpu::Memory::Device);
    const ops::MoeRouting r{&ib, nullptr, nullptr, n_tokens, kTopK};
    gpu::Stream s(ctx());
    s.begin();
    const ops::TensorView xv = ops::f32_rows(xb, n_tokens, n_in), gv = ops::f32_rows(gy, n_pairs, n_out),
                          uv = ops::f32_rows(uy, n_pairs, n_out);
    ops::moe_matvec_swiglu(s, gw, uw, xv, false, r, ops::f32_rows(fused, n_pairs, n_out));
    ops::moe_matmul(s, gw, xv, false, r, gv);
    ops::moe_matmul(s, uw, xv, false, r, uv);
    s.barrier("gate and up before swiglu");
    ops::swiglu(s, gv, uv, gv);
    s.submit_and_wait();
    const std::vector<float> got = download(fused);
    EXPECT_EQ(got, download(gy)) << name_of(t.type);
    EXPECT_LT(test::nmse(got, ref), 1e-7) << name_of(t.type);
}

// x is rounded as llama.cpp's CPU backend rounds it for the type (its vec_dot_type: Q8_0's blocks
// of 32 for IQ4_NL, Q8_K's of 256 for the others). Where the decode matvec rounds x itself, it
// gives what round_activations and then a plain matvec give; elsewhere it refuses to.
TEST_P(IquantOps, ActivationsRoundedAsLlamaCppsCpuBackend) {
    const IquantType& t = GetParam();
    const ops::ActRounding mode = ops::activation_rounding(t.type);
    EXPECT_EQ(mode, block_elems(t.type) == 32 ? ops::ActRounding::Q8_32 : ops::ActRounding::Q8_256) << name_of(t.type);
    const int64_t n_in = row_lengths(t.type).back(), n_out = 13;
    const TestWeight w = make_weight(ctx(), t, n_in, n_out, 91);
    auto xv = test::random_floats(size_t(n_in), 17, -3.0f, 3.0f);
    xv[size_t(n_in / 3)] = 250.0f;  // one block scaled by a large value
    gpu::Buffer x = upload(ctx(), xv), rounded(ctx(), size_t(n_in) * 4, gpu::Memory::Device);
    gpu::Buffer fused(ctx(), size_t(n_out) * 4, gpu::Memory::Device), plain(ctx(), size_t(n_out) * 4, gpu::Memory::Device);
    const ops::TensorView xr = ops::f32_rows(x, 1, n_in), rr = ops::f32_rows(rounded, 1, n_in);
    gpu::Stream s(ctx());
    if (!ops::matvec_rounds_activations(t.type)) {
        s.begin();
        EXPECT_THROW(ops::matmul(s, w.gpu(), xr, ops::f32_rows(fused, 1, n_out), false, true), ops::ShapeError);
        s.submit_and_wait();
        return;
    }
    s.begin();
    ops::round_activations(s, xr, rr, mode);
    ops::matmul(s, w.gpu(), xr, ops::f32_rows(fused, 1, n_out), false, /*round_x=*/true);
    s.barrier("rounded x is complete before the plain matvec reads it");
    ops::matmul(s, w.gpu(), rr, ops::f32_rows(plain, 1, n_out));
    s.submit_and_wait();
    const std::vector<float> a = download(fused), b = download(plain);
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-6f * (1.0f + std::fabs(b[i]))) << "row " << i;
    // Rounding matters: the product with x unrounded differs.
    gpu::Buffer exact(ctx(), size_t(n_out) * 4, gpu::Memory::Device);
    s.begin();
    ops::matmul(s, w.gpu(), xr, ops::f32_rows(exact, 1, n_out));
    s.submit_and_wait();
    EXPECT_NE(download(exact), b);
}

}  // namespace vkllm::test::iquant
