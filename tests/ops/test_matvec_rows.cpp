// ops::matmul over 2 to 16 tokens (shaders/matvec_rows.comp: each weight block decoded once and
// dotted with up to 8 tokens' x) against cpu::matmul on the same weight bytes: odd shapes (weight
// rows no multiple of the workgroup's, n_in no multiple of 256 where the type allows), 2, 3 and 8
// tokens (the three x-row buckets, 3 also leaving a bucket row unused), 13 and 16 (two windows),
// accumulate, offsets and strides, binding windows and workgroup-count limits.
// The kernel's per-type code is dequant4 (shaders/include/dequant*.glsl), which test_matmul.cpp
// checks for every type; each pipeline here is a cold lavapipe compile of seconds, so one type
// per decoder family is enough: F32 (the float tail past the last group of 32, every bucket and
// the windowing), F16 (16-bit float words), Q4_0 (a 32-element block with an f16 scale at an
// even byte address), Q4_K (a super-block with packed sub-block scales) and IQ2_XXS (a grid
// i-quant, whose codebook is the kernel's one extra binding).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cpu/ref_ops.h"
#include "gguf/quant.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "op_test_data.h"
#include "ops/ops.h"
#include "test_support.h"
#include "test_weight.h"

namespace vkllm {
namespace {

using gguf::TensorType;
using test::download;
using test::upload;
using test::make_weight;
using test::TestWeight;

// Runs matmul over n_tokens rows of x at x_offset into y at y_offset (rows y_stride apart, 0:
// n_out) and checks it against the reference; elements of y outside the output keep their sentinels.
void check(gpu::Context& ctx, const TestWeight& w, int64_t n_tokens, bool accumulate = false, int64_t x_offset = 0,
           int64_t y_offset = 0, int64_t y_stride = 0) {
    const int64_t stride = y_stride ? y_stride : w.n_out;
    const uint32_t seed = uint32_t(w.n_in * 5 + w.n_out * 3 + n_tokens);
    const auto x = test::random_floats(size_t(n_tokens * w.n_in), seed, -2.0f, 2.0f);
    std::vector<float> x_all(size_t(x_offset), 9.0f);
    x_all.insert(x_all.end(), x.begin(), x.end());
    x_all.push_back(9.0f);
    const auto y0 = test::random_floats(size_t(n_tokens * w.n_out), seed + 1);
    std::vector<float> y_all(size_t(y_offset + n_tokens * stride + 2), -3.5f);
    std::vector<float> ref(size_t(n_tokens * w.n_out));
    cpu::matmul(w.cpu(), x.data(), ref.data(), n_tokens);
    for (int64_t t = 0; t < n_tokens; ++t)
        for (int64_t o = 0; o < w.n_out; ++o) {
            const size_t i = size_t(t * w.n_out + o);
            if (accumulate) {
                y_all[size_t(y_offset + t * stride + o)] = y0[i];
                ref[i] += y0[i];
            }
        }
    gpu::Buffer xb = upload(ctx, x_all), yb = upload(ctx, y_all);
    gpu::Stream s(ctx);
    s.begin();
    ops::matmul(s, w.gpu(), ops::f32_rows(xb, n_tokens, w.n_in, uint64_t(x_offset)),
                ops::f32_rows(yb, n_tokens, w.n_out, uint64_t(y_offset), y_stride), accumulate);
    s.submit_and_wait();
    const auto got_all = download(yb);
    const std::string what = std::string(gguf::type_traits(w.type)->name) + " n_in " + std::to_string(w.n_in) +
                             " n_out " + std::to_string(w.n_out) + " tokens " + std::to_string(n_tokens);
    std::vector<float> got(ref.size());
    std::vector<bool> written(got_all.size(), false);
    for (int64_t t = 0; t < n_tokens; ++t)
        for (int64_t o = 0; o < w.n_out; ++o) {
            const size_t at = size_t(y_offset + t * stride + o);
            got[size_t(t * w.n_out + o)] = got_all[at];
            written[at] = true;
        }
    EXPECT_LT(test::nmse(got, ref), 1e-9) << what;
    for (size_t i = 0; i < y_all.size(); ++i) {
        if (!written[i]) {
            ASSERT_EQ(got_all[i], -3.5f) << what << ": y element " << i << " outside the output changed";
        }
    }
}

struct TypeCase {
    TensorType type;
    int64_t n_in;  // no multiple of 256 where the block allows it
};

class MatvecRows : public test::GpuTest, public ::testing::WithParamInterface<TypeCase> {};

// Three tokens (the bucket of 4, one bucket row unused) over odd row counts.
TEST_P(MatvecRows, MatchesReferenceForOddShapes) {
    const TypeCase c = GetParam();
    for (int64_t n_out : {1, 7, 37}) check(ctx(), make_weight(ctx(), c.type, c.n_in, n_out, uint32_t(n_out)), 3);
}

INSTANTIATE_TEST_SUITE_P(Types, MatvecRows,
                         ::testing::Values(TypeCase{TensorType::F32, 100}, TypeCase{TensorType::F16, 70},
                                           TypeCase{TensorType::Q4_0, 96}, TypeCase{TensorType::Q4_K, 512},
                                           TypeCase{TensorType::IQ2_XXS, 256}),
                         [](const auto& info) { return std::string(gguf::type_traits(info.param.type)->name); });

class MatvecRowsF32 : public test::GpuTest {};

// Every bucket (2, 4, 8 rows of x), every count up to 8 and two windows of 8 (13, 16), with
// accumulate, offsets that rule out vec4 loads of x, and a y stride wider than the outputs.
TEST_F(MatvecRowsF32, EveryTokenCountAccumulatesWithOffsetsAndStride) {
    const TestWeight w = make_weight(ctx(), TensorType::F32, 68, 45, 11);
    for (int64_t n_tokens : {2, 3, 4, 5, 6, 7, 8, 13, 16}) check(ctx(), w, n_tokens);
    for (int64_t n_tokens : {2, 13}) {
        check(ctx(), w, n_tokens, /*accumulate=*/true);
        check(ctx(), w, n_tokens, /*accumulate=*/false, /*x_offset=*/3, /*y_offset=*/5, /*y_stride=*/52);
        check(ctx(), w, n_tokens, /*accumulate=*/true, /*x_offset=*/1, /*y_offset=*/17, /*y_stride=*/45);
    }
}

// A binding limit far below the weight splits it into row windows and x into token windows; a
// workgroup-count limit folds the row groups into a 2-D grid.
TEST_F(MatvecRowsF32, SplitsWindowsAndRespectsWorkgroupCountLimits) {
    const TestWeight w = make_weight(ctx(), TensorType::F32, 100, 301, 12);
    {
        const uint64_t align = std::max<uint64_t>(ctx().caps().min_storage_buffer_offset_alignment, 4);
        test::ScopedEnv env("VKLLM_MAX_BINDING_BYTES", std::to_string(2 * align + 16 + 3 * 100 * 4));
        check(ctx(), w, 8);
    }
    test::ScopedEnv env("VKLLM_MAX_WORKGROUP_COUNT", "3");
    check(ctx(), w, 3);
}

// The few-token kernel sums each row as the one-token matvec does (the same units per thread, the
// same reduction), so for float weights each token's outputs are the matvec's bit for bit whatever
// the count: a batched pass of up to 16 rows gives a sequence the logits it gets alone. The tiled
// matmul sums in another order, so this also shows which kernel ran.
TEST_F(MatvecRowsF32, EqualsTheOneTokenMatvecBitForBit) {
    // One weight row per workgroup for both kernels: small pipelines, quick to compile.
    test::ScopedEnv shape("VKLLM_MATVEC_SHAPE", std::to_string(ctx().caps().subgroup_arithmetic
                                                                   ? ctx().caps().subgroup_size : 64u) + "x1");
    const int64_t n_tokens = 13;
    const TestWeight w = make_weight(ctx(), TensorType::F32, 100, 37, 13);
    const auto x = test::random_floats(size_t(n_tokens * w.n_in), 14, -2.0f, 2.0f);
    gpu::Buffer xb = upload(ctx(), x);
    gpu::Buffer rows(ctx(), size_t(n_tokens * w.n_out) * 4, gpu::Memory::Device);
    gpu::Buffer one(ctx(), size_t(n_tokens * w.n_out) * 4, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    ops::matmul(s, w.gpu(), ops::f32_rows(xb, n_tokens, w.n_in), ops::f32_rows(rows, n_tokens, w.n_out));
    for (int64_t t = 0; t < n_tokens; ++t)
        ops::matmul(s, w.gpu(), ops::f32_rows(xb, 1, w.n_in, uint64_t(t * w.n_in)),
                    ops::f32_rows(one, 1, w.n_out, uint64_t(t * w.n_out)));
    s.submit_and_wait();
    EXPECT_EQ(download(rows), download(one));
}

// VKLLM_MATVEC_ROWS must be a token count from 1 to 64.
TEST_F(MatvecRowsF32, BadRowsOverrideIsAClearError) {
    const TestWeight w = make_weight(ctx(), TensorType::F32, 32, 4, 15);
    gpu::Buffer xb(ctx(), 2 * 32 * 4, gpu::Memory::Device), yb(ctx(), 2 * 4 * 4, gpu::Memory::Device);
    for (const char* bad : {"0", "65", "two"}) {
        test::ScopedEnv env("VKLLM_MATVEC_ROWS", bad);
        gpu::Stream s(ctx());
        s.begin();
        try {
            ops::matmul(s, w.gpu(), ops::f32_rows(xb, 2, 32), ops::f32_rows(yb, 2, 4));
            ADD_FAILURE() << "VKLLM_MATVEC_ROWS=" << bad << " was accepted";
        } catch (const ops::ShapeError& e) {
            EXPECT_NE(std::string(e.what()).find("VKLLM_MATVEC_ROWS"), std::string::npos) << e.what();
        }
        s.submit_and_wait();
    }
}

}  // namespace
}  // namespace vkllm
