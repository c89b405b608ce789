// ops::matmul (matvec and tiled matmul shaders) against cpu::matmul on the same weight bytes,
// for every weight type the GPU decodes: odd shapes, accumulate, offsets and strides, and
// weights split into binding windows.
// Every pipeline (shader variant and specialization) costs a cold lavapipe compile, seconds each
// (a matvec variant: 3-25 s), so the fused and specialised variants (GLU, in-matvec rounding,
// the fused norm, the int8 path, other workgroup shapes) are checked on types chosen to cover
// their code paths, not on every type: their type-specific code (the row decode, dequant_dot.glsl)
// is the plain matvec's, which every type goes through on odd shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cpu/ref_ops.h"
#include "gguf/quant.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/ops.h"
#include "ops/weight_ops.h"
#include "op_test_data.h"
#include "test_support.h"
#include "test_weight.h"

namespace vkllm {
namespace {

using gguf::TensorType;


uint32_t block_of(TensorType t) { return gguf::type_traits(t)->block_size; }

// Row lengths to test: whole blocks for block types; odd lengths for float types.
std::vector<int64_t> row_lengths(TensorType t) {
    switch (block_of(t)) {
        case 1: return {17, 64, 100};
        case 32: return {32, 64, 96};
        default: return {256, 512};
    }
}

// Tokens that take one of the tiled matmul's three larger tiles (pick_matmul_tiles on a CPU driver: 17 -> 64 x 32,
// 40 -> 64 x 64, 67 -> 128 x 128; 2 to 16 take the smallest, 32 x 32, also the mobile clamp's
// fallback). Each type takes one of them besides the smallest, so each tile shape is checked on a
// float, a block-of-32 and a super-block type without compiling every type at every tile.
int64_t large_tile_tokens(TensorType t) {
    switch (t) {
        case TensorType::F32: case TensorType::Q8_0: case TensorType::Q5_0: case TensorType::Q3_K:
        case TensorType::Q6_K:
            return 17;
        case TensorType::F16: case TensorType::Q4_0: case TensorType::Q5_1: case TensorType::Q2_K:
        case TensorType::MXFP4:
            return 40;
        default:  // BF16, Q4_1, Q4_K, Q5_K
            return 67;
    }
}

using test::make_weight;
using test::TestWeight;

using test::download;
using test::upload;

// Runs matmul with x at x_offset and y at y_offset (rows y_stride apart, 0: n_out) in buffers
// whose other elements hold sentinels; checks against the reference and that the sentinels
// survive. With accumulate, y starts random and the reference adds it.
// The fp32 kernels only: on a device with NVIDIA's cooperative matrices the tiled prompt matmul
// would take the tensor-core kernel (fp16 inputs), which test_matmul_coopmat checks to its bounds.
void check_matmul(gpu::Context& ctx, const TestWeight& w, int64_t n_tokens, bool accumulate = false,
                  int64_t x_offset = 0, int64_t y_offset = 0, int64_t y_stride = 0, double tol = 1e-9) {
    test::ScopedEnv fp32_kernels("VKLLM_COOPMAT", "0");
    const int64_t stride = y_stride ? y_stride : w.n_out;
    const uint32_t seed = uint32_t(w.n_in * 7 + w.n_out * 13 + n_tokens);
    auto x = test::random_floats(size_t(n_tokens * w.n_in), seed, -2.0f, 2.0f);
    std::vector<float> x_all(size_t(x_offset), 7.0f);
    x_all.insert(x_all.end(), x.begin(), x.end());
    x_all.push_back(7.0f);  // a float past the end

    const size_t y_size = size_t(y_offset + n_tokens * stride + 2);
    std::vector<float> y_all(y_size, -3.5f);  // sentinels
    auto y0 = test::random_floats(size_t(n_tokens * w.n_out), seed + 1);
    for (int64_t t = 0; t < n_tokens; ++t)
        for (int64_t o = 0; o < w.n_out; ++o)
            if (accumulate) y_all[size_t(y_offset + t * stride + o)] = y0[size_t(t * w.n_out + o)];

    std::vector<float> ref(size_t(n_tokens * w.n_out));
    cpu::matmul(w.cpu(), x.data(), ref.data(), n_tokens);
    if (accumulate)
        for (size_t i = 0; i < ref.size(); ++i) ref[i] += y0[i];

    gpu::Buffer xb = upload(ctx, x_all), yb = upload(ctx, y_all);
    gpu::Stream s(ctx);
    s.begin();
    ops::matmul(s, w.gpu(), ops::f32_rows(xb, n_tokens, w.n_in, uint64_t(x_offset)),
                ops::f32_rows(yb, n_tokens, w.n_out, uint64_t(y_offset), y_stride), accumulate);
    s.submit_and_wait();
    auto got_all = download(yb);

    std::vector<float> got(ref.size());
    std::vector<bool> written(y_size, false);
    for (int64_t t = 0; t < n_tokens; ++t)
        for (int64_t o = 0; o < w.n_out; ++o) {
            const size_t at = size_t(y_offset + t * stride + o);
            got[size_t(t * w.n_out + o)] = got_all[at];
            written[at] = true;
        }
    const std::string what = std::string(gguf::type_traits(w.type)->name) + " n_in " + std::to_string(w.n_in) +
                             " n_out " + std::to_string(w.n_out) + " n_tokens " + std::to_string(n_tokens);
    EXPECT_LT(test::nmse(got, ref), tol) << what;
    for (size_t i = 0; i < y_size; ++i)
        if (!written[i]) {
            ASSERT_EQ(got_all[i], -3.5f) << what << ": y element " << i << " outside the output changed";
        }
}

class MatmulType : public test::GpuTest, public ::testing::WithParamInterface<TensorType> {};

TEST_P(MatmulType, MatchesReferenceForOddShapes) {
    const TensorType type = GetParam();
    ASSERT_TRUE(ops::gpu_supports(type));
    for (int64_t n_in : row_lengths(type)) {
        for (int64_t n_out : {1, 7, 33, 100}) {
            TestWeight w = make_weight(ctx(), type, n_in, n_out, uint32_t(n_in + n_out));
            for (int64_t n_tokens : {int64_t(1), int64_t(2), int64_t(5), large_tile_tokens(type)})
                check_matmul(ctx(), w, n_tokens);
        }
    }
}

TEST_P(MatmulType, AccumulatesWithOffsetsAndStride) {
    const TensorType type = GetParam();
    TestWeight w = make_weight(ctx(), type, row_lengths(type).back(), 45, 99);
    for (int64_t n_tokens : {int64_t(1), int64_t(3), large_tile_tokens(type)}) {  // matvec and the type's tiles
        check_matmul(ctx(), w, n_tokens, /*accumulate=*/true);
        check_matmul(ctx(), w, n_tokens, /*accumulate=*/false, /*x_offset=*/3, /*y_offset=*/5, /*y_stride=*/52);
        check_matmul(ctx(), w, n_tokens, /*accumulate=*/true, /*x_offset=*/1, /*y_offset=*/17, /*y_stride=*/45);
    }
}

// A binding limit far below the weight's size splits it into row windows at aligned offsets
// (rows do not start at aligned bytes) and the activations into token windows.
TEST_P(MatmulType, SplitsWeightsLargerThanOneBinding) {
    const TensorType type = GetParam();
    const int64_t n_in = row_lengths(type).front(), n_out = 101;
    TestWeight w = make_weight(ctx(), type, n_in, n_out, 5);
    const uint64_t align = std::max<uint64_t>(ctx().caps().min_storage_buffer_offset_alignment, 4);
    const uint64_t row_bytes = w.bytes.size() / uint64_t(n_out);
    // Room for about 3 rows and 3 tokens of x per window.
    const uint64_t limit = 2 * align + 16 + std::max<uint64_t>(3 * row_bytes, 3 * uint64_t(n_in) * 4);
    ASSERT_GT(w.bytes.size(), 2 * limit) << "the weight should need several windows";
    test::ScopedEnv env("VKLLM_MAX_BINDING_BYTES", std::to_string(limit));
    for (int64_t n_tokens : {1, 2, 9}) check_matmul(ctx(), w, n_tokens);
    check_matmul(ctx(), w, 1, /*accumulate=*/true, /*x_offset=*/2, /*y_offset=*/3, /*y_stride=*/0);
}

// Few workgroups per grid dimension: matvec folds its row groups into a 2-D grid, matmul splits rows.
TEST_P(MatmulType, RespectsWorkgroupCountLimits) {
    const TensorType type = GetParam();
    TestWeight w = make_weight(ctx(), type, row_lengths(type).front(), 301, 6);
    test::ScopedEnv env("VKLLM_MAX_WORKGROUP_COUNT", "3");
    for (int64_t n_tokens : {1, 4}) check_matmul(ctx(), w, n_tokens);
}

// matmul(..., round_x): the one-token matvec rounds x itself. It must give what rounding with
// round_activations first and then a plain matvec gives (the same operations on the same values),
// for every row length, with a few large values per row (Q8 blocks scaled by them) and exact
// zeros (a block of zeros: scale 0); types whose rounding spans threads refuse it.
TEST_P(MatmulType, MatvecRoundsActivationsAsRoundActivationsDoes) {
    const TensorType type = GetParam();
    if (!ops::matvec_rounds_activations(type)) {
        TestWeight w = make_weight(ctx(), type, row_lengths(type).front(), 3, 7);
        gpu::Buffer x(ctx(), size_t(w.n_in) * 4, gpu::Memory::Device), y(ctx(), 12, gpu::Memory::Device);
        gpu::Stream s(ctx());
        s.begin();
        EXPECT_THROW(ops::matmul(s, w.gpu(), ops::f32_rows(x, 1, w.n_in), ops::f32_rows(y, 1, w.n_out), false, true),
                     ops::ShapeError);
        s.submit_and_wait();
        return;
    }
    const ops::ActRounding mode = ops::activation_rounding(type);
    for (int64_t n_in : row_lengths(type)) {
        TestWeight w = make_weight(ctx(), type, n_in, 77, uint32_t(n_in));
        auto xv = test::random_floats(size_t(n_in), uint32_t(n_in + 5), -3.0f, 3.0f);
        xv[size_t(n_in / 3)] = 250.0f;
        for (int64_t e = 0; e < std::min<int64_t>(n_in, 32) && n_in >= 64; ++e) xv[size_t(n_in - 1 - e)] = 0.0f;
        gpu::Buffer x = upload(ctx(), xv), rounded(ctx(), size_t(n_in) * 4, gpu::Memory::Device);
        gpu::Buffer fused(ctx(), size_t(w.n_out) * 4, gpu::Memory::Device), plain(ctx(), size_t(w.n_out) * 4, gpu::Memory::Device);
        gpu::Stream s(ctx());
        s.begin();
        const ops::TensorView xr = ops::f32_rows(x, 1, n_in), rr = ops::f32_rows(rounded, 1, n_in);
        ops::round_activations(s, xr, rr, mode);
        ops::matmul(s, w.gpu(), xr, ops::f32_rows(fused, 1, w.n_out), false, /*round_x=*/true);
        s.barrier("rounded x is complete before the plain matvec reads it");
        ops::matmul(s, w.gpu(), rr, ops::f32_rows(plain, 1, w.n_out));
        s.submit_and_wait();
        const std::vector<float> a = download(fused), b = download(plain);
        for (size_t i = 0; i < a.size(); ++i)
            ASSERT_NEAR(a[i], b[i], 1e-6f * (1.0f + std::fabs(b[i]))) << "n_in " << n_in << " row " << i;
        // Rounding matters: the unrounded product differs somewhere.
        gpu::Buffer exact(ctx(), size_t(w.n_out) * 4, gpu::Memory::Device);
        s.begin();
        ops::matmul(s, w.gpu(), xr, ops::f32_rows(exact, 1, w.n_out));
        s.submit_and_wait();
        EXPECT_NE(download(exact), b) << "n_in " << n_in;
    }
    // Several tokens are the tiled matmul's: it does not round.
    TestWeight w = make_weight(ctx(), type, row_lengths(type).front(), 3, 8);
    gpu::Buffer x(ctx(), size_t(w.n_in) * 8, gpu::Memory::Device), y(ctx(), 24, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    EXPECT_THROW(ops::matmul(s, w.gpu(), ops::f32_rows(x, 2, w.n_in), ops::f32_rows(y, 2, w.n_out), false, true),
                 ops::ShapeError);
    s.submit_and_wait();
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulType, ::testing::ValuesIn(test::kGpuWeightTypes),
                         [](const ::testing::TestParamInfo<TensorType>& info) {
                             return std::string(gguf::type_traits(info.param)->name);
                         });

// Gate, up and SwiGLU (or GeGLU) in one dispatch (decode's gated FFN): gate and up in one buffer,
// up at an offset, against the CPU reference, and equal to the unfused path (two matvecs and the
// swiglu or geglu op: the same sums in the same order), with and without the in-matvec rounding.
// The GLU variant differs from the plain matvec in its epilogue and its second set of rows only,
// so it is checked on a float type with partial groups of 32 (F32), F16 with and without its
// fp16 rounding of x, a block type with and without its int8 rounding (Q8_0) and a super-block
// type (Q4_K); GeGLU's two GELU forms on F32 (exact x) and Q8_0 (rounded x).
struct GluVariant {
    ops::GluActivation act;
    bool round_x;
};

std::vector<GluVariant> glu_variants(TensorType type) {
    using A = ops::GluActivation;
    switch (type) {
        case TensorType::F32: return {{A::SiLU, false}, {A::Gelu, false}};
        case TensorType::F16: return {{A::SiLU, false}, {A::SiLU, true}};
        case TensorType::Q8_0: return {{A::SiLU, false}, {A::SiLU, true}, {A::GeluFp16Table, true}};
        default: return {{A::SiLU, false}};
    }
}

class MatvecSwigluType : public test::GpuTest, public ::testing::WithParamInterface<TensorType> {};

TEST_P(MatvecSwigluType, EqualsGateUpThenSwiglu) {
    const TensorType type = GetParam();
    for (int64_t n_in : row_lengths(type))
        for (int64_t n_out : {int64_t(1), int64_t(7), int64_t(131)}) {
            SCOPED_TRACE("n_in " + std::to_string(n_in) + " n_out " + std::to_string(n_out));
            TestWeight g = make_weight(ctx(), type, n_in, n_out, uint32_t(n_in + 3 * n_out));
            TestWeight u = make_weight(ctx(), type, n_in, n_out, uint32_t(n_in + 3 * n_out + 1));
            const uint64_t up_offset = (g.bytes.size() + 255) / 256 * 256;
            gpu::Buffer pair(ctx(), up_offset + ops::weight_buffer_bytes(type, n_in, n_out), gpu::Memory::Device);
            pair.upload(g.bytes.data(), g.bytes.size());
            pair.upload(u.bytes.data(), u.bytes.size(), up_offset);
            const ops::Weight gw{type, &pair, n_in, n_out, 0}, uw{type, &pair, n_in, n_out, up_offset};
            ASSERT_TRUE(ops::matvec_swiglu_fits(ctx(), gw, uw));
            EXPECT_FALSE(ops::matvec_swiglu_fits(ctx(), uw, gw));  // up before gate

            auto xv = test::random_floats(size_t(n_in + 1), uint32_t(n_in), -2.0f, 2.0f);  // x at offset 1
            std::vector<float> ref_g(static_cast<size_t>(n_out)), ref_u(ref_g), ref(ref_g);
            cpu::matmul(g.cpu(), xv.data() + 1, ref_g.data(), 1);
            cpu::matmul(u.cpu(), xv.data() + 1, ref_u.data(), 1);
            for (size_t o = 0; o < ref.size(); ++o) ref[o] = ref_g[o] / (1.0f + std::exp(-ref_g[o])) * ref_u[o];

            for (const auto [act, round_x] : glu_variants(type)) {
                ASSERT_TRUE(!round_x || ops::matvec_rounds_activations(type));
                SCOPED_TRACE(std::string(round_x ? "rounded x" : "exact x") + ", activation " +
                             std::to_string(int(act)));
                gpu::Buffer x = upload(ctx(), xv), fused(ctx(), size_t(n_out + 2) * 4, gpu::Memory::Device);
                gpu::Buffer gy(ctx(), size_t(n_out) * 4, gpu::Memory::Device),
                    uy(ctx(), size_t(n_out) * 4, gpu::Memory::Device);
                gpu::Stream s(ctx());
                s.begin();
                const ops::TensorView xr = ops::f32_rows(x, 1, n_in, 1);
                const ops::TensorView gr = ops::f32_rows(gy, 1, n_out), ur = ops::f32_rows(uy, 1, n_out);
                ops::matvec_swiglu(s, gw, uw, xr, ops::f32_rows(fused, 1, n_out, 2), round_x, act);
                ops::matmul(s, gw, xr, gr, false, round_x);
                ops::matmul(s, uw, xr, ur, false, round_x);
                s.barrier("gate and up are complete before the gated activation");
                if (act == ops::GluActivation::SiLU) ops::swiglu(s, gr, ur, gr);
                else ops::geglu(s, gr, ur, gr, act == ops::GluActivation::GeluFp16Table);
                s.submit_and_wait();
                const std::vector<float> all = download(fused), unfused = download(gy);
                const std::vector<float> got(all.begin() + 2, all.end());
                EXPECT_EQ(got, unfused);
                // silu(g) * u multiplies two sums' relative errors: a looser bound than one matmul's 1e-9.
                if (!round_x && act == ops::GluActivation::SiLU) {
                    EXPECT_LT(test::nmse(got, ref), 1e-7);
                }
            }
        }
    // Refused: two buffers.
    TestWeight g = make_weight(ctx(), type, row_lengths(type).front(), 4, 1);
    TestWeight u = make_weight(ctx(), type, row_lengths(type).front(), 4, 2);
    EXPECT_FALSE(ops::matvec_swiglu_fits(ctx(), g.gpu(), u.gpu()));
}

INSTANTIATE_TEST_SUITE_P(Types, MatvecSwigluType,
                         ::testing::Values(TensorType::F32, TensorType::F16, TensorType::Q8_0, TensorType::Q4_K),
                         [](const ::testing::TestParamInfo<TensorType>& info) {
                             return std::string(gguf::type_traits(info.param)->name);
                         });

class Matmul : public test::GpuTest {};

// Projections the size of a small model's (decode and a prefill chunk) in a super-block, a
// block-of-32 and a float type: long rows take matvec's wider workgroups (the shared-memory
// shapes: 64 x 2, and 128 x 2 past 16384 elements) and its two-units-per-trip loop.
TEST_F(Matmul, ModelSizedProjections) {
    for (TensorType type : {TensorType::Q4_K, TensorType::Q8_0, TensorType::F16}) {
        TestWeight w = make_weight(ctx(), type, 4608, 96, 11);
        for (int64_t n_tokens : {int64_t(1), large_tile_tokens(type)}) check_matmul(ctx(), w, n_tokens);
    }
    TestWeight w = make_weight(ctx(), TensorType::Q4_0, 513 * 32, 9, 12);
    check_matmul(ctx(), w, 1);
    TestWeight big = make_weight(ctx(), TensorType::Q4_K, 1024, 288, 13);
    check_matmul(ctx(), big, 129);
}

// The int8 matvec (matvec.comp INT_DOT, Capabilities::integer_dot_matvec): x rounded to 8-bit
// blocks and dotted with the quants in integers. It is the float path's rounded matvec up to
// float summation (its integer sums are exact), for every type that has it, with blocks of zeros,
// a dominant value, unaligned x (no vec4 loads), accumulate, many rows (the 2-D grid's padding);
// the fused SwiGLU (the same per-type dot, two sets of rows) on Q8_0. The variant names say which
// path ran.
TEST_F(Matmul, IntegerDotMatvecEqualsTheFloatPath) {
    std::unique_ptr<gpu::Context> int_ctx = test::context_with_integer_dot(1),
                                  float_ctx = test::context_with_integer_dot(0);
    if (!int_ctx->caps().integer_dot_product)
        GTEST_SKIP() << "this device (or VKLLM_LIMITS profile) has no integer dot product";
    ASSERT_TRUE(int_ctx->caps().integer_dot_matvec);
    ASSERT_FALSE(float_ctx->caps().integer_dot_matvec);
    EXPECT_EQ(ops::weights::matvec_variant(int_ctx->caps(), "matvec_", TensorType::Q4_0, true).rfind("matvec_q4_0_idot", 0), 0u);
    EXPECT_EQ(ops::weights::matvec_variant(int_ctx->caps(), "matvec_", TensorType::Q4_0, false).find("idot"), std::string::npos);
    EXPECT_EQ(ops::weights::matvec_variant(int_ctx->caps(), "matvec_", TensorType::Q4_K, true).find("idot"), std::string::npos);

    for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1})
        for (int64_t n_in : {int64_t(32), int64_t(96), int64_t(1024)})
            for (int64_t n_out : {int64_t(1), int64_t(13), int64_t(300)}) {
                SCOPED_TRACE(std::string(gguf::type_traits(type)->name) + " n_in " + std::to_string(n_in) + " n_out " +
                             std::to_string(n_out));
                auto gv = test::random_floats(size_t(n_in * n_out), uint32_t(n_in + n_out));
                auto uv = test::random_floats(size_t(n_in * n_out), uint32_t(n_in + n_out + 1));
                const std::vector<uint8_t> gate_bytes = gguf::quantize(type, gv.data(), gv.size());
                const std::vector<uint8_t> up_bytes = gguf::quantize(type, uv.data(), uv.size());
                const uint64_t up_offset = (gate_bytes.size() + 255) / 256 * 256;
                auto xv = test::random_floats(size_t(n_in + 1), uint32_t(n_in * 3 + 1), -3.0f, 3.0f);  // x at offset 1
                xv[size_t(1 + n_in / 2)] = 300.0f;
                if (n_in >= 64)
                    for (int64_t e = 0; e < 32; ++e) xv[size_t(1 + e)] = 0.0f;  // a block of zeros: scale 0
                auto y0 = test::random_floats(size_t(n_out), 5);

                // y = y0 + W x (accumulate) and the fused SwiGLU of the two halves, on one context.
                const bool glu = type == TensorType::Q8_0;
                auto run = [&](gpu::Context& ctx) {
                    gpu::Buffer w(ctx, up_offset + up_bytes.size() + 4, gpu::Memory::Device);
                    w.upload(gate_bytes.data(), gate_bytes.size());
                    w.upload(up_bytes.data(), up_bytes.size(), up_offset);
                    const ops::Weight gate{type, &w, n_in, n_out, 0}, up{type, &w, n_in, n_out, up_offset};
                    gpu::Buffer x = upload(ctx, xv), y = upload(ctx, y0), glu_y(ctx, size_t(n_out) * 4, gpu::Memory::Device);
                    gpu::Stream s(ctx);
                    s.begin();
                    const ops::TensorView xr = ops::f32_rows(x, 1, n_in, 1);
                    ops::matmul(s, gate, xr, ops::f32_rows(y, 1, n_out), /*accumulate=*/true, /*round_x=*/true);
                    if (glu) ops::matvec_swiglu(s, gate, up, xr, ops::f32_rows(glu_y, 1, n_out), /*round_x=*/true);
                    s.submit_and_wait();
                    return std::make_pair(download(y), glu ? download(glu_y) : std::vector<float>());
                };
                const auto [yi, gi] = run(*int_ctx);
                const auto [yf, gf] = run(*float_ctx);
                // The int8 sums are exact; the float path's error grows with sum |w_i x_i| (its
                // summation order is the device's: an fma here, a tree there), so the bound is
                // relative to that magnitude: some tens of ulps of it, far below what a wrong
                // quant, bias or scale costs (a whole product term or more).
                const std::vector<float> gw = gguf::dequantize(type, gate_bytes.data(), gv.size());
                const std::vector<float> uw = gguf::dequantize(type, up_bytes.data(), uv.size());
                auto magnitude = [&](const std::vector<float>& w, size_t o) {
                    double m = 0;
                    for (int64_t e = 0; e < n_in; ++e) m += std::fabs(w[o * size_t(n_in) + size_t(e)] * xv[size_t(1 + e)]);
                    return float(m);
                };
                for (size_t o = 0; o < yf.size(); ++o)
                    ASSERT_NEAR(yi[o], yf[o], 4e-6f * magnitude(gw, o) + 1e-6f * std::fabs(yf[o])) << "row " << o;
                for (size_t o = 0; o < gf.size(); ++o) {
                    // silu(g) u: g's error moves it by at most |u| (silu' <= 1.1), u's by |silu(g)|.
                    const float g = yf[o] - y0[o], silu_g = g / (1.0f + std::exp(-g));
                    const float u_mag = magnitude(uw, o), g_mag = magnitude(gw, o);
                    const float u = std::fabs(silu_g) > 1e-20f ? gf[o] / silu_g : u_mag;
                    ASSERT_NEAR(gi[o], gf[o], 4e-6f * (1.1f * std::fabs(u) * g_mag + std::fabs(silu_g) * u_mag) + 1e-6f * std::fabs(gf[o]))
                        << "swiglu row " << o;
                }
            }
}

// Workgroups of several subgroups (GPU shapes such as 128 x 8, forced here with
// VKLLM_MATVEC_SHAPE) reduce each subgroup's sums, then combine them in shared memory: the same
// results as the reference for a float, a super-block and a block-of-32 type (the combine does
// not depend on the type; 64 x 4 is also MatvecNormEqualsRmsNormThenMatvec's shape).
TEST_F(Matmul, MultiSubgroupMatvecShapesMatchTheReference) {
    if (!ctx().caps().subgroup_arithmetic || ctx().caps().subgroup_size > 64)
        GTEST_SKIP() << "needs subgroup arithmetic with subgroups of at most 64";
    for (auto [shape, type] : {std::pair{"64x4", TensorType::F16}, std::pair{"64x4", TensorType::Q4_K},
                               std::pair{"128x8", TensorType::Q4_0}}) {
        test::ScopedEnv forced("VKLLM_MATVEC_SHAPE", shape);
        SCOPED_TRACE(std::string(shape) + " " + gguf::type_traits(type)->name);
        for (int64_t n_out : {int64_t(1), int64_t(13), int64_t(300)}) {
            TestWeight w = make_weight(ctx(), type, 512, n_out, uint32_t(n_out + 3));
            check_matmul(ctx(), w, 1, /*accumulate=*/true, /*x_offset=*/1, /*y_offset=*/3);
        }
    }
}

// Decode's pre-norm inside the matvec (ops::MatvecNorm) against rms_norm and then the matvec
// (and matvec_swiglu): x at an odd offset and an aligned one, the norm weight at an offset, with
// the in-matvec rounding where the type has it. With the matvec's workgroup forced to the norm's
// (64 threads for rows under 1024) both sum x^2 in the same order: bit-equal. In the device's
// own shape (one subgroup on lavapipe) the sums differ in order only. The norm is read where x
// is (x_quad, and the float types' partial last group), the same code for every type, so the
// cases cover its paths rather than types (each variant is a cold lavapipe compile): F16 rows of
// 17, 64 and 100 (partial groups) with and without the GLU, in both shapes, and with its fp16
// rounding; a block type that rounds x to int8 per block of 32; a super-block type.
TEST_F(Matmul, MatvecNormEqualsRmsNormThenMatvec) {
    struct Case {
        TensorType type;
        bool round_x, glu, forced;
    };
    const float eps = 1e-5f;
    for (const Case c : {Case{TensorType::F16, false, true, true}, Case{TensorType::F16, false, true, false},
                         Case{TensorType::F16, true, false, true}, Case{TensorType::Q8_0, true, false, true},
                         Case{TensorType::Q4_K, false, false, true}})
    for (int64_t n_in : row_lengths(c.type)) {
        const TensorType type = c.type;
        const bool round_x = c.round_x, forced = c.forced;
        ASSERT_TRUE(!round_x || ops::matvec_rounds_activations(type));
        TestWeight w = make_weight(ctx(), type, n_in, 37, uint32_t(n_in + 11));
        TestWeight g = make_weight(ctx(), type, n_in, 37, uint32_t(n_in + 12));
        TestWeight u = make_weight(ctx(), type, n_in, 37, uint32_t(n_in + 13));
        const uint64_t up_offset = (g.bytes.size() + 255) / 256 * 256;
        gpu::Buffer pair(ctx(), up_offset + ops::weight_buffer_bytes(type, n_in, 37), gpu::Memory::Device);
        pair.upload(g.bytes.data(), g.bytes.size());
        pair.upload(u.bytes.data(), u.bytes.size(), up_offset);
        const ops::Weight gw{type, &pair, n_in, 37, 0}, uw{type, &pair, n_in, 37, up_offset};
        auto nwv = test::random_floats(size_t(n_in), uint32_t(n_in + 14), 0.5f, 1.5f);
        std::vector<float> nwv_shifted(3, 9.0f);
        nwv_shifted.insert(nwv_shifted.end(), nwv.begin(), nwv.end());
        gpu::Buffer nw = upload(ctx(), nwv), nw_shifted = upload(ctx(), nwv_shifted);
        const ops::MatvecNorm norm{&nw_shifted, 3, eps};
        for (int64_t x_offset : {int64_t(0), int64_t(1)}) {
            SCOPED_TRACE(std::string(gguf::type_traits(type)->name) + " n_in " + std::to_string(n_in) + " x_offset " + std::to_string(x_offset) +
                         (round_x ? " rounded x" : " exact x") + (forced ? " 64x4" : " own shape"));
            std::optional<test::ScopedEnv> shape;
            if (forced) shape.emplace("VKLLM_MATVEC_SHAPE", "64x4");
            auto xv = test::random_floats(size_t(n_in + x_offset), uint32_t(n_in + x_offset), -3.0f, 3.0f);
            xv[size_t(x_offset + n_in / 2)] = 40.0f;  // a massive activation
            gpu::Buffer x = upload(ctx(), xv), h(ctx(), size_t(n_in) * 4, gpu::Memory::Device);
            auto y0 = test::random_floats(37, 5);
            gpu::Buffer fused = upload(ctx(), y0), plain = upload(ctx(), y0);
            gpu::Buffer fused_glu(ctx(), 37 * 4, gpu::Memory::Device), plain_glu(ctx(), 37 * 4, gpu::Memory::Device);
            gpu::Stream s(ctx());
            s.begin();
            const ops::TensorView xr = ops::f32_rows(x, 1, n_in, uint64_t(x_offset)), hr = ops::f32_rows(h, 1, n_in);
            const int64_t n_out = w.n_out;
            ops::matmul(s, w.gpu(), xr, ops::f32_rows(fused, 1, n_out), /*accumulate=*/true, round_x, &norm);
            if (c.glu)
                ops::matvec_swiglu(s, gw, uw, xr, ops::f32_rows(fused_glu, 1, gw.n_out), round_x, ops::GluActivation::SiLU,
                                   &norm);
            ops::rms_norm(s, xr, &nw, hr, eps);
            s.barrier("the normalised x is complete before the plain matvecs read it");
            ops::matmul(s, w.gpu(), hr, ops::f32_rows(plain, 1, n_out), /*accumulate=*/true, round_x);
            if (c.glu) ops::matvec_swiglu(s, gw, uw, hr, ops::f32_rows(plain_glu, 1, gw.n_out), round_x);
            s.submit_and_wait();
            const std::vector<float> a = download(fused), b = download(plain);
            const std::vector<float> ag = download(fused_glu), bg = download(plain_glu);
            if (forced) {
                EXPECT_EQ(a, b);
                if (c.glu) {
                    EXPECT_EQ(ag, bg);
                }
            } else if (!round_x) {  // rounding to 8 bits may flip a step where inv differs in an ulp
                EXPECT_LT(test::nmse(a, b), 1e-10);
                if (c.glu) {
                    EXPECT_LT(test::nmse(ag, bg), 1e-10);
                }
            }
            // The norm matters: the matvec of x itself differs.
            gpu::Buffer raw = upload(ctx(), y0);
            s.begin();
            ops::matmul(s, w.gpu(), xr, ops::f32_rows(raw, 1, n_out), true, round_x);
            s.submit_and_wait();
            EXPECT_GT(test::nmse(download(raw), b), 1e-4);
        }
    }
    // Refused: several tokens (the tiled matmul takes x as it is), a norm weight too short.
    TestWeight w = make_weight(ctx(), TensorType::Q8_0, 32, 3, 9);
    gpu::Buffer x(ctx(), size_t(w.n_in) * 8, gpu::Memory::Device), y(ctx(), 24, gpu::Memory::Device);
    gpu::Buffer short_w(ctx(), size_t(w.n_in) * 4, gpu::Memory::Device);
    const ops::MatvecNorm too_short{&short_w, 1, 1e-5f};
    gpu::Stream s(ctx());
    s.begin();
    const ops::MatvecNorm ok{&short_w, 0, 1e-5f};
    EXPECT_THROW(ops::matmul(s, w.gpu(), ops::f32_rows(x, 2, w.n_in), ops::f32_rows(y, 2, w.n_out), false, false, &ok),
                 ops::ShapeError);
    EXPECT_THROW(ops::matmul(s, w.gpu(), ops::f32_rows(x, 1, w.n_in), ops::f32_rows(y, 1, w.n_out), false, false,
                             &too_short),
                 ops::ShapeError);
    s.submit_and_wait();
}

// The decode matvec's workgroup shape follows the capability record: one subgroup per workgroup
// with subgroup arithmetic (8 rows on a CPU device, 2-4 on a GPU, never more rows than threads),
// else the wide shared-memory shape, clamped to the device's workgroup size.
TEST_F(Matmul, MatvecShapeFollowsTheCapabilities) {
    gpu::Capabilities caps = ctx().caps();
    caps.max_workgroup_invocations = 1024;
    caps.max_workgroup_size[0] = 1024;
    caps.subgroup_arithmetic = true;
    caps.subgroup_size = 32;
    caps.type = "discrete";
    auto shape = [&](uint64_t units) {
        const ops::weights::MatvecShape m = ops::weights::matvec_shape(caps, units);
        return std::pair<uint32_t, uint32_t>(m.threads, m.rows);
    };
    EXPECT_EQ(shape(24), std::make_pair(32u, 4u));
    EXPECT_EQ(shape(64), std::make_pair(32u, 2u));
    // Large 8-bit-block matrices on a GPU: 128 threads, 8 rows (not for the fused GLU pair).
    EXPECT_TRUE(ops::weights::large_int8_matvec(TensorType::Q4_0, 4096, 4096));
    EXPECT_FALSE(ops::weights::large_int8_matvec(TensorType::Q4_0, 4096, 4095));
    EXPECT_FALSE(ops::weights::large_int8_matvec(TensorType::Q4_K, 14336, 4096));
    const ops::weights::MatvecShape large = ops::weights::matvec_shape(caps, 128, false, true);
    EXPECT_EQ(std::make_pair(large.threads, large.rows), std::make_pair(128u, 8u));
    const ops::weights::MatvecShape large_glu = ops::weights::matvec_shape(caps, 128, true, true);
    EXPECT_EQ(std::make_pair(large_glu.threads, large_glu.rows), std::make_pair(32u, 2u));
    caps.type = "cpu";
    EXPECT_EQ(ops::weights::matvec_shape(caps, 128, false, true).rows, 8u);  // a CPU device keeps its shape
    EXPECT_EQ(ops::weights::matvec_shape(caps, 128, false, true).threads, 32u);
    caps.subgroup_size = 8;
    EXPECT_EQ(shape(24), std::make_pair(8u, 8u));
    caps.subgroup_size = 4;
    EXPECT_EQ(shape(24), std::make_pair(4u, 4u));
    caps.subgroup_size = 12;  // not a power of two: the shared-memory shape
    EXPECT_EQ(shape(24), std::make_pair(64u, 4u));
    caps.subgroup_size = 8;
    caps.subgroup_arithmetic = false;
    EXPECT_EQ(shape(24), std::make_pair(64u, 4u));
    EXPECT_EQ(shape(1024), std::make_pair(128u, 2u));
    caps.max_workgroup_invocations = 32;
    EXPECT_EQ(shape(1024), std::make_pair(32u, 2u));
}

TEST_F(Matmul, RejectsBadArguments) {
    TestWeight w = make_weight(ctx(), TensorType::Q4_0, 64, 4, 1);
    gpu::Buffer x(ctx(), 64 * 4 * 2, gpu::Memory::Device), y(ctx(), 4 * 4 * 2, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    // Unsupported types.
    EXPECT_FALSE(ops::gpu_supports(TensorType::Q8_1));
    EXPECT_FALSE(ops::gpu_supports(TensorType::I32));
    auto matmul = [&](const ops::Weight& wt, const gpu::Buffer& xb, uint64_t x_offset, const gpu::Buffer& yb,
                      uint64_t y_offset, int64_t rows, int64_t y_stride = 0) {
        ops::matmul(s, wt, ops::f32_rows(xb, rows, wt.n_in, x_offset), ops::f32_rows(yb, rows, wt.n_out, y_offset, y_stride));
    };
    ops::Weight bad = w.gpu();
    bad.type = TensorType::Q8_1;
    EXPECT_THROW(matmul(bad, x, 0, y, 0, 1), ops::ShapeError);
    // A row length that is not a whole number of blocks.
    bad = w.gpu();
    bad.n_in = 48;
    EXPECT_THROW(matmul(bad, x, 0, y, 0, 1), ops::ShapeError);
    // A weight buffer too small for its rows.
    bad = w.gpu();
    bad.n_out = 100;
    EXPECT_THROW(matmul(bad, x, 0, y, 0, 1), ops::ShapeError);
    // Activations outside their buffers, a short stride, aliasing.
    EXPECT_THROW(matmul(w.gpu(), x, 0, y, 0, 3), ops::ShapeError);
    EXPECT_THROW(matmul(w.gpu(), x, 1, y, 0, 2), ops::ShapeError);
    EXPECT_THROW(matmul(w.gpu(), x, 0, y, 0, 2, 3), ops::ShapeError);
    EXPECT_THROW(matmul(w.gpu(), x, 0, x, 60, 1), ops::ShapeError);
    EXPECT_THROW(ops::weight_buffer_bytes(TensorType::Q4_K, 100, 1), ops::ShapeError);
    EXPECT_EQ(ops::weight_buffer_bytes(TensorType::Q6_K, 256, 3), 632u);  // 630 rounded up to words
    s.submit_and_wait();
}

// The view form checks its operands against the weight and each other before recording.
TEST_F(Matmul, ViewsAreChecked) {
    TestWeight w = make_weight(ctx(), TensorType::F32, 8, 4, 1);
    gpu::Buffer x(ctx(), 8 * 4 * 2, gpu::Memory::Device), y(ctx(), 4 * 4 * 2, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    const ops::TensorView x2 = ops::f32_rows(x, 2, 8), y2 = ops::f32_rows(y, 2, 4);
    EXPECT_THROW(ops::matmul(s, w.gpu(), ops::f32_rows(x, 2, 6), y2), ops::ShapeError);  // not the weight's n_in
    EXPECT_THROW(ops::matmul(s, w.gpu(), x2, ops::f32_rows(y, 2, 3)), ops::ShapeError);  // not its n_out
    EXPECT_THROW(ops::matmul(s, w.gpu(), x2, ops::f32_rows(y, 1, 4)), ops::ShapeError);  // rows differ
    EXPECT_THROW(ops::matmul(s, w.gpu(), ops::f32_rows(x, 1, 8, 0, 12), ops::f32_rows(y, 1, 4)),
                 ops::ShapeError);  // x rows not packed
    ops::TensorView odd = x2;
    odd.offset = 2;  // not a whole float
    EXPECT_THROW(ops::matmul(s, w.gpu(), odd, y2), ops::ShapeError);
    ops::TensorView f16 = x2;
    f16.type = TensorType::F16;
    EXPECT_THROW(ops::matmul(s, w.gpu(), f16, y2), ops::ShapeError);
    EXPECT_THROW(ops::matmul(s, w.gpu(), ops::TensorView{nullptr, 0, 2, 8}, y2), ops::ShapeError);
    EXPECT_THROW(ops::add(s, x2, x2, ops::f32_rows(x, 2, 4)), ops::ShapeError);  // shapes differ
    EXPECT_THROW(ops::add(s, ops::f32_rows(x, 1, 8), ops::f32_rows(x, 1, 8, 8), ops::f32_rows(y, 1, 8, 1)),
                 ops::ShapeError);  // out past its buffer's end
    ops::matmul(s, w.gpu(), x2, y2);  // well formed: records
    s.submit_and_wait();
}

TEST_F(Matmul, BadBindingLimitOverrideIsAClearError) {
    TestWeight w = make_weight(ctx(), TensorType::F32, 8, 2, 1);
    gpu::Buffer x(ctx(), 8 * 4, gpu::Memory::Device), y(ctx(), 2 * 4, gpu::Memory::Device);
    test::ScopedEnv env("VKLLM_MAX_BINDING_BYTES", "lots");
    gpu::Stream s(ctx());
    s.begin();
    try {
        ops::matmul(s, w.gpu(), ops::f32_rows(x, 1, 8), ops::f32_rows(y, 1, 2));
        ADD_FAILURE() << "expected an error";
    } catch (const ops::ShapeError& e) {
        EXPECT_NE(std::string(e.what()).find("VKLLM_MAX_BINDING_BYTES"), std::string::npos) << e.what();
    }
    s.submit_and_wait();
}

}  // namespace
}  // namespace vkllm
