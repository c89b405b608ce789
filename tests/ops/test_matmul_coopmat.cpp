// The prompt matmul's tile choices (ops/matmul_tiles.h) and its tensor-core kernel
// (shaders/matmul.comp COOPMAT, GL_NV_cooperative_matrix) against cpu::matmul.
//
// The tile choices are host functions, checked here on made-up device records. The kernel runs
// only on a device with VK_NV_cooperative_matrix and a build whose glslc compiled the variants;
// elsewhere (lavapipe, the mobile clamp) those tests skip and say why.
//
// Tolerance. The kernel rounds each weight (after decoding) and each activation to fp16 (unit
// roundoff u = 2^-11), multiplies exactly and accumulates in fp32. A product w' x' = w x (1 + a)
// (1 + b) with |a|, |b| <= u, so each output's error is at most (2u + u^2) sum_k |w_k x_k| plus the
// fp32 accumulation's, below K 2^-22 sum_k |w_k x_k| even for tensor cores that truncate their
// sums: the bound every element is held to. The errors of the products have random signs, so
// their sum is typically sqrt(K) times smaller than that: its RMS over the outputs, divided by
// sqrt(sum_k (w_k x_k)^2), is about 0.6-0.8 u (each rounding's relative error spreads evenly over
// [-u, u]); the test holds it under 2u. The host model of the kernel (the same roundings, summed
// in double) meets both bounds by construction, which FpRoundingModelMeetsTheBounds measures.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cpu/ref_ops.h"
#include "gguf/quant.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "op_test_data.h"
#include "ops/matmul_tiles.h"
#include "ops/ops.h"
#include "ops/weight_ops.h"
#include "test_support.h"

namespace vkllm {
namespace {

using gguf::TensorType;

constexpr double kU = 1.0 / 2048;  // fp16's unit roundoff, 2^-11

// A large desktop GPU's record (an H100's limits) and lavapipe's, for the tile choices.
gpu::Capabilities gpu_caps() {
    gpu::Capabilities c;
    c.type = "discrete";
    c.subgroup_size = 32;
    c.subgroup_basic = c.subgroup_arithmetic = true;
    c.max_shared_memory = 49152;
    c.max_workgroup_invocations = 1024;
    c.max_workgroup_size[0] = 1024;
    return c;
}
gpu::Capabilities cpu_caps() {
    gpu::Capabilities c = gpu_caps();
    c.type = "cpu";
    c.subgroup_size = 8;
    c.max_shared_memory = 65536;
    return c;
}
gpu::Capabilities nv_coopmat_caps(std::vector<CooperativeMatrixShape> shapes) {
    gpu::Capabilities c = gpu_caps();
    c.cooperative_matrix_nv = true;
    c.cooperative_matrix_nv_shapes = std::move(shapes);
    return c;
}

uint64_t grid(uint64_t rows, uint64_t tokens, uint32_t bm, uint32_t bn) {
    return ((rows + bm - 1) / bm) * ((tokens + bn - 1) / bn);
}

ops::weights::Format format_of(TensorType t) {
    ops::weights::Format f;
    EXPECT_TRUE(ops::weights::gpu_format(t, &f));
    return f;
}

// A GPU gets tiles whose grid reaches about two workgroups per SM of a large GPU (256) while a
// smaller tile exists; a CPU driver keeps the largest tile that suits the prompt (lavapipe's tuned
// choice: 17 tokens 64 x 32, 40 64 x 64, 67 128 x 128).
TEST(MatmulTiles, GpuGridsFillTheDeviceCpuKeepsTheLargestTile) {
    const gpu::Capabilities gpu = gpu_caps(), cpu = cpu_caps();
    // A 134M Llama's 768-row matrices at a 32-token prompt: 12 workgroups of 64 x 32 before.
    const ops::MatmulTiles small_prompt = ops::pick_matmul_tiles(gpu, 768, 32);
    EXPECT_EQ(grid(768, 32, small_prompt.bm, small_prompt.bn), 24u);  // the smallest tile: the most there is
    for (uint64_t rows : {768u, 2048u, 4096u, 14336u})
        for (uint64_t tokens : {17u, 32u, 67u, 512u}) {
            const ops::MatmulTiles t = ops::pick_matmul_tiles(gpu, rows, tokens);
            EXPECT_TRUE(grid(rows, tokens, t.bm, t.bn) >= 256 || t.bm == 32)
                << rows << " x " << tokens << ": " << t.bm << " x " << t.bn;
            EXPECT_LE(t.shared_bytes(), gpu.max_shared_memory);
        }
    const ops::MatmulTiles big = ops::pick_matmul_tiles(gpu, 14336, 512);
    EXPECT_EQ(big.bm, 128u) << "a large matrix keeps the large tile";
    struct Want {
        uint64_t tokens;
        uint32_t bm, bn;
    };
    for (const Want& w : {Want{17, 64, 32}, Want{40, 64, 64}, Want{67, 128, 128}, Want{512, 128, 128}}) {
        const ops::MatmulTiles t = ops::pick_matmul_tiles(cpu, 768, w.tokens);
        EXPECT_EQ(t.bm, w.bm) << w.tokens;
        EXPECT_EQ(t.bn, w.bn) << w.tokens;
    }
    gpu::Capabilities mobile = gpu;
    gpu::apply_limits_profile(mobile, "mobile");
    EXPECT_EQ(ops::pick_matmul_tiles(mobile, 768, 512).bm, 128u) << "the mobile clamp keeps the largest tile";
    // The rule the grouped expert matmul's scalar tiles follow too.
    EXPECT_TRUE(ops::grid_leaves_units_idle(gpu, 768, 32, 64, 32));
    EXPECT_FALSE(ops::grid_leaves_units_idle(gpu, 768, 32 * 22, 64, 32));
    EXPECT_FALSE(ops::grid_leaves_units_idle(cpu, 768, 32, 64, 32));
    EXPECT_FALSE(ops::grid_leaves_units_idle(mobile, 768, 32, 64, 32));
    for (const ops::MatmulTiles& t : {ops::pick_matmul_tiles(gpu, 100, 67), ops::pick_matmul_tiles(cpu, 100, 67)}) {
        EXPECT_EQ(t.threads(), (t.bm / t.tm) * (t.bn / t.tn));
        EXPECT_EQ(t.bm % t.tm + t.bn % t.tn + t.tm % 4 + t.tn % 4, 0u);
    }
    {  // VKLLM_MATMUL_TILE takes a tile the kernel has, whatever the choice would be
        test::ScopedEnv forced("VKLLM_MATMUL_TILE", "64x64");
        EXPECT_EQ(ops::pick_matmul_tiles(cpu, 768, 512).bm, 64u);
        EXPECT_EQ(ops::pick_matmul_tiles(gpu, 20, 17).bn, 64u);
    }
    for (const char* bad : {"48x48", "64", "64x64x1", "x"}) {
        test::ScopedEnv forced("VKLLM_MATMUL_TILE", bad);
        EXPECT_THROW(ops::pick_matmul_tiles(gpu, 768, 512), ops::ShapeError) << bad;
    }
}

// The tensor-core kernel is planned only on a device with NV cooperative matrices, in a build
// with the variants, unless VKLLM_COOPMAT=0; its shape is one the device lists.
TEST(MatmulTiles, CoopmatPlanFollowsTheDeviceTheBuildAndTheKnob) {
    const ops::weights::Format q4_k = format_of(TensorType::Q4_K);
    const bool built = ops::coopmat_variant(q4_k).has_value();
    EXPECT_FALSE(ops::coopmat_plan(gpu_caps(), q4_k, 768, 512)) << "no cooperative matrices on the device";
    EXPECT_FALSE(ops::coopmat_plan(cpu_caps(), q4_k, 768, 512));
    const gpu::Capabilities nv = nv_coopmat_caps({{16, 8, 16}, {16, 16, 16}, {16, 8, 8}});
    gpu::Capabilities clamped = nv;
    gpu::apply_limits_profile(clamped, "mobile");
    EXPECT_FALSE(clamped.cooperative_matrix_nv);
    EXPECT_FALSE(ops::coopmat_plan(clamped, q4_k, 768, 512)) << "the mobile clamp has no cooperative matrices";
    if (!built) {
        EXPECT_FALSE(ops::coopmat_plan(nv, q4_k, 768, 512));
        GTEST_SKIP() << "this build left the matmul_coopmat_* variants out (cmake/CoopmatProbe.cmake says why at "
                        "configure time); checked that nothing plans them";
    }
    for (uint64_t rows : {33u, 768u, 4096u})
        for (uint64_t tokens : {17u, 40u, 512u}) {
            const std::optional<ops::CoopmatPlan> plan = ops::coopmat_plan(nv, q4_k, rows, tokens);
            ASSERT_TRUE(plan) << rows << " x " << tokens;
            const ops::CoopmatTiles& t = plan->tiles;
            EXPECT_EQ(t.shape.m, 16u);
            EXPECT_EQ(t.shape.n, 16u);
            EXPECT_EQ(t.shape.k, 16u);
            EXPECT_EQ(t.bm % t.wm + t.bn % t.wn + t.wm % t.shape.m + t.wn % t.shape.n + t.bk % t.shape.k, 0u);
            EXPECT_EQ(t.threads(), t.subgroups() * 32u);
            EXPECT_LE(t.threads(), 1024u);
            EXPECT_LE(t.shared_bytes(), nv.max_shared_memory);
            EXPECT_TRUE(grid(rows, tokens, t.bm, t.bn) >= 256 || t.bm == 32) << rows << " x " << tokens;
            EXPECT_EQ(gpu::shader_name(plan->shader), std::string("matmul_coopmat_q4_k"));
        }
    // A device without 16 x 16 x 16 gets a shape it lists.
    const std::optional<ops::CoopmatPlan> narrow = ops::coopmat_plan(nv_coopmat_caps({{16, 8, 8}}), q4_k, 4096, 512);
    ASSERT_TRUE(narrow);
    EXPECT_EQ(narrow->tiles.shape.n, 8u);
    EXPECT_EQ(narrow->tiles.bk % 8, 0u);
    EXPECT_FALSE(ops::coopmat_plan(nv_coopmat_caps({{64, 64, 64}}), q4_k, 4096, 512)) << "no usable shape";
    {
        test::ScopedEnv off("VKLLM_COOPMAT", "0");
        EXPECT_FALSE(ops::coopmat_plan(nv, q4_k, 768, 512));
    }
    {
        test::ScopedEnv bad("VKLLM_COOPMAT", "yes");
        EXPECT_THROW(ops::coopmat_plan(nv, q4_k, 768, 512), ops::ShapeError);
    }
    for (const char* tile : {"128x128", "64x64", "64x32", "32x32"}) {
        test::ScopedEnv forced("VKLLM_MATMUL_TILE", tile);
        const std::optional<ops::CoopmatPlan> plan = ops::coopmat_plan(nv, q4_k, 33, 17);
        ASSERT_TRUE(plan);
        EXPECT_EQ(std::to_string(plan->tiles.bm) + "x" + std::to_string(plan->tiles.bn), tile);
    }
    {
        test::ScopedEnv forced("VKLLM_MATMUL_TILE", "32x64");
        EXPECT_THROW(ops::coopmat_plan(nv, q4_k, 768, 512), ops::ShapeError);
    }
    // The K step: 32 unless VKLLM_COOPMAT_BK says otherwise; the shared memory it takes still fits.
    EXPECT_EQ(ops::coopmat_plan(nv, q4_k, 4096, 512)->tiles.bk, 32u);
    for (uint32_t bk : {64u, 128u}) {
        test::ScopedEnv step("VKLLM_COOPMAT_BK", std::to_string(bk));
        const std::optional<ops::CoopmatPlan> plan = ops::coopmat_plan(nv, q4_k, 4096, 512);
        ASSERT_TRUE(plan);
        EXPECT_EQ(plan->tiles.bk, bk);
        EXPECT_LE(plan->tiles.shared_bytes(), nv.max_shared_memory);
    }
    for (const char* bad : {"48", "16", "256", "64x"}) {
        test::ScopedEnv step("VKLLM_COOPMAT_BK", bad);
        EXPECT_THROW(ops::coopmat_plan(nv, q4_k, 768, 512), ops::ShapeError) << bad;
    }
    // Register double buffering on GPUs, not on a CPU driver, unless VKLLM_MATMUL_PREFETCH says.
    EXPECT_EQ(ops::coopmat_plan(nv, q4_k, 768, 512)->tiles.prefetch, 1u);
    EXPECT_EQ(ops::pick_matmul_tiles(gpu_caps(), 768, 512).prefetch, 1u);
    EXPECT_EQ(ops::pick_matmul_tiles(cpu_caps(), 768, 512).prefetch, 0u);
    {
        test::ScopedEnv off("VKLLM_MATMUL_PREFETCH", "0");
        EXPECT_EQ(ops::coopmat_plan(nv, q4_k, 768, 512)->tiles.prefetch, 0u);
        EXPECT_EQ(ops::pick_matmul_tiles(gpu_caps(), 768, 512).prefetch, 0u);
    }
    EXPECT_EQ(ops::coopmat_plan(nv, q4_k, 768, 512)->tiles.spec().size(), 10u) << "COOPMAT constants 0..9";
    EXPECT_EQ(ops::pick_matmul_tiles(cpu_caps(), 768, 512).spec().size(), 7u) << "scalar constants 0..6";
}

// ---- the kernel against the reference ----

struct Case {
    TensorType type;
    int64_t n_in, n_out;
};

// fp16 rounding of one value.
float fp16(float v) { return gguf::fp16_to_fp32(gguf::fp32_to_fp16(v)); }

// What one output may differ from the fp32 reference by (the file's comment derives it), and
// the scale its typical error is measured against.
struct Bounds {
    std::vector<double> max_err;  // per output: (2u + u^2 + K 2^-22) sum_k |w_k x_k|
    std::vector<double> rms_scale;  // per output: sqrt(sum_k (w_k x_k)^2)
    std::vector<double> abs_sum;    // per output: sum_k |w_k x_k|
    std::vector<float> model;     // the kernel's arithmetic on the host: fp16 w and x, summed in double
};

Bounds bounds(const std::vector<float>& w, const std::vector<float>& x, int64_t n_in, int64_t n_out,
              int64_t n_tokens) {
    Bounds b;
    const double per_sum = 2 * kU + kU * kU + double(n_in) / (1 << 22);
    for (int64_t t = 0; t < n_tokens; ++t)
        for (int64_t o = 0; o < n_out; ++o) {
            double abs_sum = 0, sq_sum = 0, model = 0;
            for (int64_t k = 0; k < n_in; ++k) {
                const double p = double(w[size_t(o * n_in + k)]) * x[size_t(t * n_in + k)];
                abs_sum += std::fabs(p);
                sq_sum += p * p;
                model += double(fp16(w[size_t(o * n_in + k)])) * fp16(x[size_t(t * n_in + k)]);
            }
            b.max_err.push_back(per_sum * abs_sum + 1e-30);
            b.rms_scale.push_back(std::sqrt(sq_sum));
            b.abs_sum.push_back(abs_sum);
            b.model.push_back(float(model));
        }
    return b;
}

// Each element within its bound; returns the largest error / bound and the RMS error in units of
// u sqrt(sum (w x)^2).
struct Measured {
    double worst = 0, rms_u = 0;
};
Measured measure(const std::vector<float>& got, const std::vector<float>& ref, const Bounds& b, const std::string& what) {
    Measured m;
    double sq = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        const double err = std::fabs(double(got[i]) - ref[i]);
        m.worst = std::max(m.worst, err / b.max_err[i]);
        sq += (err / (kU * b.rms_scale[i] + 1e-30)) * (err / (kU * b.rms_scale[i] + 1e-30));
        if (!(err <= b.max_err[i])) {
            ADD_FAILURE() << what << ": output " << i << " is " << got[i] << ", the reference " << ref[i]
                          << ", beyond the fp16 bound " << b.max_err[i];
            break;
        }
    }
    m.rms_u = std::sqrt(sq / double(ref.size()));
    return m;
}

std::vector<float> dequantized(TensorType type, const std::vector<uint8_t>& bytes, int64_t n) {
    return gguf::dequantize(type, bytes.data(), size_t(n));
}

// The host model of the kernel's arithmetic meets the bounds the GPU is held to, on the shapes
// and types the GPU test uses: the derivation, measured (runs everywhere, no GPU).
TEST(MatmulCoopmatTolerance, Fp16RoundingModelMeetsTheBounds) {
    for (const Case& c : {Case{TensorType::F32, 100, 33}, Case{TensorType::Q4_0, 512, 33},
                          Case{TensorType::Q4_K, 512, 33}}) {
        const auto values = test::random_floats(size_t(c.n_in * c.n_out), 11);
        const auto bytes = gguf::quantize(c.type, values.data(), values.size());
        const auto w = dequantized(c.type, bytes, c.n_in * c.n_out);
        const int64_t n_tokens = 17;
        const auto x = test::random_floats(size_t(n_tokens * c.n_in), 12, -2.0f, 2.0f);
        std::vector<float> ref(size_t(n_tokens * c.n_out));
        cpu::matmul({c.type, bytes.data(), c.n_in, c.n_out}, x.data(), ref.data(), n_tokens);
        const Bounds b = bounds(w, x, c.n_in, c.n_out, n_tokens);
        const std::string what = gguf::type_traits(c.type)->name;
        const Measured m = measure(b.model, ref, b, what);
        std::printf("fp16 model, %s K=%lld: largest error %.3f of the bound, RMS error %.2f u sqrt(sum (wx)^2)\n",
                    what.c_str(), (long long)c.n_in, m.worst, m.rms_u);
        EXPECT_LT(m.worst, 0.5) << what;      // the worst case is far from typical
        EXPECT_GT(m.rms_u, 0.2) << what;      // the rounding is really there (the model is not the reference)
        EXPECT_LT(m.rms_u, 2.0) << what;
    }
}

class MatmulCoopmat : public test::GpuTest, public ::testing::WithParamInterface<TensorType> {
protected:
    void SetUp() override {
        GpuTest::SetUp();
        if (!ctx().caps().cooperative_matrix_nv)
            GTEST_SKIP() << "device '" << ctx().caps().name
                         << "' has no VK_NV_cooperative_matrix with fp16 x fp16 -> fp32 shapes (the tensor-core "
                            "matmul runs on NVIDIA GPUs); the scalar matmul serves it (test_matmul)";
        if (!ops::coopmat_variant(format_of(TensorType::F32)))
            GTEST_SKIP() << "this build left the matmul_coopmat_* variants out (cmake/CoopmatProbe.cmake says why)";
    }

    // y = W x through ops::matmul with y's rows y_stride apart after y_offset (sentinels around),
    // checked against cpu::matmul within the fp16 bounds and against the host model of the kernel.
    void check(const Case& c, int64_t n_tokens, bool accumulate = false, int64_t x_offset = 0, int64_t y_offset = 0,
               int64_t y_stride = 0) {
        const std::string what = std::string(gguf::type_traits(c.type)->name) + " n_in " + std::to_string(c.n_in) +
                                 " n_out " + std::to_string(c.n_out) + " n_tokens " + std::to_string(n_tokens);
        ASSERT_TRUE(ops::coopmat_plan(ctx().caps(), format_of(c.type), uint64_t(c.n_out), uint64_t(n_tokens)))
            << what << ": the tensor-core kernel should take this matmul";
        const auto values = test::random_floats(size_t(c.n_in * c.n_out), uint32_t(c.n_in + c.n_out));
        const auto bytes = gguf::quantize(c.type, values.data(), values.size());
        gpu::Buffer wb(ctx(), ops::weight_buffer_bytes(c.type, c.n_in, c.n_out), gpu::Memory::Device);
        wb.upload(bytes.data(), bytes.size());
        const ops::Weight weight{c.type, &wb, c.n_in, c.n_out};

        const int64_t stride = y_stride ? y_stride : c.n_out;
        const auto x = test::random_floats(size_t(n_tokens * c.n_in), uint32_t(n_tokens), -2.0f, 2.0f);
        std::vector<float> x_all(size_t(x_offset), 7.0f);
        x_all.insert(x_all.end(), x.begin(), x.end());
        const size_t y_size = size_t(y_offset + (n_tokens - 1) * stride + c.n_out + 3);
        std::vector<float> y_all(y_size, -3.5f);
        const auto y0 = test::random_floats(size_t(n_tokens * c.n_out), 5);
        for (int64_t t = 0; t < n_tokens; ++t)
            for (int64_t o = 0; o < c.n_out; ++o)
                if (accumulate) y_all[size_t(y_offset + t * stride + o)] = y0[size_t(t * c.n_out + o)];

        gpu::Buffer xb = test::upload(ctx(), x_all), yb = test::upload(ctx(), y_all);
        gpu::Stream s(ctx());
        s.begin();
        ops::matmul(s, weight, ops::f32_rows(xb, n_tokens, c.n_in, uint64_t(x_offset)),
                    ops::f32_rows(yb, n_tokens, c.n_out, uint64_t(y_offset), y_stride), accumulate);
        s.submit_and_wait();
        const auto got_all = test::download(yb);

        std::vector<float> ref(size_t(n_tokens * c.n_out)), got(ref.size());
        cpu::matmul({c.type, bytes.data(), c.n_in, c.n_out}, x.data(), ref.data(), n_tokens);
        std::vector<bool> written(y_size, false);
        for (int64_t t = 0; t < n_tokens; ++t)
            for (int64_t o = 0; o < c.n_out; ++o) {
                const size_t at = size_t(y_offset + t * stride + o);
                got[size_t(t * c.n_out + o)] = got_all[at] - (accumulate ? y0[size_t(t * c.n_out + o)] : 0.0f);
                written[at] = true;
            }
        for (size_t i = 0; i < y_size; ++i) {
            if (!written[i]) {
                ASSERT_EQ(got_all[i], -3.5f) << what << ": y element " << i << " outside the output changed";
            }
        }

        const Bounds b = bounds(dequantized(c.type, bytes, c.n_in * c.n_out), x, c.n_in, c.n_out, n_tokens);
        const Measured m = measure(got, ref, b, what);
        std::printf("%s: largest error %.3f of the bound, RMS error %.2f u sqrt(sum (wx)^2)\n", what.c_str(), m.worst,
                    m.rms_u);
        EXPECT_LT(m.rms_u, 2.0) << what;
        // The kernel does the model's arithmetic: only the fp32 summation order differs.
        // (K 2^-22 of sum |w x| for the fp32 sums, 1e-6 for adding to and taking away y's start values)
        for (size_t i = 0; i < got.size(); ++i) {
            const double allowed = double(c.n_in) / (1 << 22) * b.abs_sum[i] + 1e-6;
            if (!(std::fabs(double(got[i]) - b.model[i]) <= allowed)) {
                ADD_FAILURE() << what << ": output " << i << " is " << got[i] << ", the host model of the kernel "
                              << b.model[i] << ": further apart than fp32 sums allow (" << allowed << ")";
                break;
            }
        }
    }
};

// Odd shapes: rows and tokens that leave partial tiles (33, 100 rows; 17, 40, 150 tokens), K not a
// multiple of the 32-element step for float types (100) and whole blocks for the others, each
// token count taking a different tile.
// Every tile is forced once (VKLLM_MATMUL_TILE): small matrices would otherwise all take the
// smallest, the grid-filling choice for a GPU.
TEST_P(MatmulCoopmat, MatchesReferenceWithinFp16Rounding) {
    const TensorType type = GetParam();
    const uint32_t block = gguf::type_traits(type)->block_size;
    const int64_t n_in = block == 1 ? 100 : block == 32 ? 96 : 512;
    for (int64_t n_out : {33, 100})
        for (int64_t n_tokens : {17, 40, 150}) check({type, n_in, n_out}, n_tokens);
    for (const char* tile : {"128x128", "64x64", "64x32", "32x32"}) {
        test::ScopedEnv forced("VKLLM_MATMUL_TILE", tile);
        SCOPED_TRACE(tile);
        check({type, n_in, 150}, 150);
    }
    // Without the register double buffering, and with longer K steps (a float row of 100 ends
    // inside the last step; a row of 96 inside the second of 64).
    for (const auto& [name, value] : {std::pair{"VKLLM_MATMUL_PREFETCH", "0"}, std::pair{"VKLLM_COOPMAT_BK", "64"},
                                      std::pair{"VKLLM_COOPMAT_BK", "128"}}) {
        test::ScopedEnv knob(name, value);
        SCOPED_TRACE(std::string(name) + "=" + value);
        check({type, n_in, 100}, 40);
    }
}

TEST_P(MatmulCoopmat, AccumulatesWithOffsetsAndStride) {
    const TensorType type = GetParam();
    const uint32_t block = gguf::type_traits(type)->block_size;
    const int64_t n_in = block == 1 ? 68 : block == 32 ? 64 : 256;
    check({type, n_in, 45}, 40, /*accumulate=*/true, /*x_offset=*/1, /*y_offset=*/17, /*y_stride=*/52);
    check({type, n_in, 45}, 23, /*accumulate=*/false, /*x_offset=*/3, /*y_offset=*/5, /*y_stride=*/45);
}

// The grouped expert matmul (moe_matmul.comp COOPMAT) after moe_sort: 8 experts, top 2, 40 tokens
// (80 pairs, tiled), 37 rows (partial row tiles), experts' pair counts leaving partial pair tiles,
// expert biases; the default tile and the largest and smallest forced.
TEST_P(MatmulCoopmat, GroupedExpertsMatchReferenceWithinFp16Rounding) {
    const TensorType type = GetParam();
    const uint32_t block = gguf::type_traits(type)->block_size;
    const int64_t n_in = block == 1 ? 100 : block == 32 ? 96 : 256, n_out = 37, n_expert = 8, n_tokens = 40;
    const int top_k = 2;
    const int64_t n_pairs = n_tokens * top_k;
    ASSERT_TRUE(ops::coopmat_moe_plan(ctx().caps(), format_of(type), uint64_t(n_out), double(n_pairs) / n_expert,
                                      uint64_t(n_pairs)))
        << "the tensor-core grouped matmul should take this batch";

    const auto values = test::random_floats(size_t(n_in * n_out * n_expert), 21);
    const auto bytes = gguf::quantize(type, values.data(), values.size());
    const auto w = dequantized(type, bytes, n_in * n_out * n_expert);
    const auto bias = test::random_floats(size_t(n_out * n_expert), 22);
    gpu::Buffer wb(ctx(), ops::weight_buffer_bytes(type, n_in, n_out * n_expert), gpu::Memory::Device);
    wb.upload(bytes.data(), bytes.size());
    gpu::Buffer bb = test::upload(ctx(), bias);
    std::vector<int32_t> ids;  // token t's experts: (3 t + j) mod 8 and 0 for a third of the tokens
    for (int64_t t = 0; t < n_tokens; ++t) {
        const int32_t first = int32_t((3 * t) % n_expert);
        ids.push_back(first);
        ids.push_back(t % 3 == 0 && first != 0 ? 0 : int32_t((first + 1) % n_expert));
    }
    const auto x = test::random_floats(size_t(n_tokens * n_in), 23, -2.0f, 2.0f);

    // Reference and bounds per pair: expert e's rows of w, the token's row of x.
    std::vector<float> ref(size_t(n_pairs * n_out));
    Bounds b;
    cpu::WeightView all{type, bytes.data(), n_in, n_out * n_expert};
    const size_t row_bytes = cpu::weight_row_bytes(all);
    for (int64_t p = 0; p < n_pairs; ++p) {
        const int64_t e = ids[size_t(p)], t = p / top_k;
        const std::vector<float> xt(x.begin() + t * n_in, x.begin() + (t + 1) * n_in);
        const std::vector<float> we(w.begin() + e * n_out * n_in, w.begin() + (e + 1) * n_out * n_in);
        cpu::matmul({type, bytes.data() + size_t(e * n_out) * row_bytes, n_in, n_out}, xt.data(),
                    ref.data() + p * n_out, 1, bias.data() + e * n_out);
        Bounds bp = bounds(we, xt, n_in, n_out, 1);
        for (int64_t o = 0; o < n_out; ++o) bp.model[size_t(o)] += bias[size_t(e * n_out + o)];
        b.max_err.insert(b.max_err.end(), bp.max_err.begin(), bp.max_err.end());
        b.rms_scale.insert(b.rms_scale.end(), bp.rms_scale.begin(), bp.rms_scale.end());
        b.abs_sum.insert(b.abs_sum.end(), bp.abs_sum.begin(), bp.abs_sum.end());
        b.model.insert(b.model.end(), bp.model.begin(), bp.model.end());
    }

    for (const char* tile : {"", "128x128", "32x32"}) {
        std::optional<test::ScopedEnv> forced;
        if (*tile) forced.emplace("VKLLM_MATMUL_TILE", tile);
        const std::string what = std::string(gguf::type_traits(type)->name) + " experts, tile " + (*tile ? tile : "chosen");
        gpu::Buffer xb = test::upload(ctx(), x), ib = test::upload(ctx(), ids);
        gpu::Buffer yb = test::upload(ctx(), std::vector<float>(size_t(n_pairs * n_out) + 3, -3.5f));
        const int64_t sort_ints = int64_t(ops::moe_sort_ints(int(n_expert), n_pairs));
        gpu::Buffer sb(ctx(), uint64_t(sort_ints) * 4, gpu::Memory::Device);
        ops::MoeRouting r;
        r.experts = &ib;
        r.sorted = &sb;
        r.n_tokens = n_tokens;
        r.top_k = top_k;
        gpu::Stream s(ctx());
        s.begin();
        ops::moe_sort(s, ops::i32_vector(ib, n_pairs), int(n_expert), ops::i32_vector(sb, sort_ints));
        s.barrier("the sorted pairs before the grouped matmul reads them");
        ops::moe_matmul(s, {type, &wb, n_in, n_out, n_expert, &bb}, ops::f32_rows(xb, n_tokens, n_in), false, r,
                        ops::f32_rows(yb, n_pairs, n_out));
        s.submit_and_wait();
        const auto got_all = test::download<float>(yb, size_t(n_pairs * n_out) + 3);
        for (size_t i = ref.size(); i < got_all.size(); ++i) ASSERT_EQ(got_all[i], -3.5f) << what << ": past y changed";
        const std::vector<float> got(got_all.begin(), got_all.begin() + long(ref.size()));
        const Measured m = measure(got, ref, b, what);
        std::printf("%s: largest error %.3f of the bound, RMS error %.2f u sqrt(sum (wx)^2)\n", what.c_str(), m.worst,
                    m.rms_u);
        EXPECT_LT(m.rms_u, 2.0) << what;
        for (size_t i = 0; i < got.size(); ++i) {
            const double allowed = double(n_in) / (1 << 22) * b.abs_sum[i] + 1e-6;
            if (!(std::fabs(double(got[i]) - b.model[i]) <= allowed)) {
                ADD_FAILURE() << what << ": output " << i << " is " << got[i] << ", the host model " << b.model[i];
                break;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Types, MatmulCoopmat,
                         ::testing::Values(TensorType::F32, TensorType::F16, TensorType::Q8_0, TensorType::Q4_0,
                                           TensorType::Q4_K),
                         [](const auto& info) { return std::string(gguf::type_traits(info.param)->name); });

}  // namespace
}  // namespace vkllm
