// Activation rounding (llama.cpp CPU parity) on the GPU against the CPU reference.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu/ref_ops.h"
#include "gguf/quant.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/ops.h"
#include "test_support.h"

namespace vkllm {
namespace {

class RoundActivations : public test::GpuTest {
protected:
    std::vector<float> run_gpu(const std::vector<float>& x, int64_t rows, int64_t n, ops::ActRounding mode,
                               uint64_t offset) {
        gpu::Buffer in(ctx(), (x.size() + offset) * 4, gpu::Memory::Device);
        gpu::Buffer out(ctx(), (x.size() + offset) * 4, gpu::Memory::Device);
        in.upload(x.data(), x.size() * 4, offset * 4);
        gpu::Stream s(ctx());
        s.begin();
        ops::round_activations(s, ops::f32_rows(in, rows, n, offset), ops::f32_rows(out, rows, n, offset), mode);
        s.submit_and_wait();
        std::vector<float> y(x.size());
        out.download(y.data(), y.size() * 4, offset * 4);
        return y;
    }
};

TEST_F(RoundActivations, Q8Blocks32And256MatchTheCpuReference) {
    for (auto [mode, block] : {std::pair{ops::ActRounding::Q8_32, 32}, std::pair{ops::ActRounding::Q8_256, 256}}) {
        for (auto [rows, n] : {std::pair<int64_t, int64_t>{1, 256}, {3, 512}, {17, 768}}) {
            auto x = test::random_floats(size_t(rows * n), uint32_t(rows * 7 + block), -3.0f, 3.0f);
            if (x.size() >= 2 * size_t(block))
                for (int j = 0; j < block; ++j) x[size_t(j)] = 0.0f;  // an all-zero block
            if (x.size() > size_t(block) + 5) x[size_t(block) + 5] = -40.0f;  // a block led by a negative value
            if (x.size() >= 3 * size_t(block)) {  // the largest magnitude twice, in two threads of a workgroup
                x[2 * size_t(block) + size_t(block) / 4 + 6] = -5.5f;
                x[2 * size_t(block) + size_t(block) * 3 / 4 + 8] = 5.5f;
            }
            std::vector<float> want(x.size());
            cpu::round_activations(x.data(), want.data(), int64_t(x.size()), block);
            for (uint64_t offset : {0u, 3u}) {
                auto got = run_gpu(x, rows, n, mode, offset);
                // Shader division may differ from IEEE by an ulp, which can move a value sitting on a
                // rounding boundary by one quantum; everything else must agree to float precision.
                size_t moved = 0;
                for (size_t i = 0; i < x.size(); ++i)
                    if (std::fabs(got[i] - want[i]) > 1e-6f * std::fabs(want[i])) ++moved;
                EXPECT_LE(moved, x.size() / 1000) << "block " << block << " rows " << rows << " offset " << offset;
                EXPECT_LT(test::nmse(got, want), 1e-9);
            }
            // Rounding keeps values close: 8 bits per block.
            EXPECT_LT(test::nmse(want, x), 1e-3);
            EXPECT_GT(test::nmse(want, x), 0.0);
        }
    }
}

TEST_F(RoundActivations, F16AndBF16RoundToNearestEven) {
    const int64_t rows = 5, n = 173;
    auto x = test::random_floats(size_t(rows * n), 3, -70000.0f, 70000.0f);
    for (size_t i = 0; i < 40; ++i) x[i] = x[i] * 1e-9f;  // fp16 subnormals
    x[50] = 65519.0f;  // rounds down to the largest fp16
    x[51] = 65520.0f;  // rounds up to inf
    for (auto [mode, is_f16] : {std::pair{ops::ActRounding::F16, true}, std::pair{ops::ActRounding::BF16, false}}) {
        std::vector<float> want(x.size());
        for (size_t i = 0; i < x.size(); ++i)
            want[i] = is_f16 ? gguf::fp16_to_fp32(gguf::fp32_to_fp16(x[i])) : gguf::bf16_to_fp32(gguf::fp32_to_bf16(x[i]));
        auto got = run_gpu(x, rows, n, mode, 1);
        for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(got[i], want[i]) << (is_f16 ? "f16 " : "bf16 ") << i << " x=" << x[i];
    }
}

TEST_F(RoundActivations, RejectsRowsThatAreNotWholeBlocks) {
    gpu::Buffer b(ctx(), 1024, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    EXPECT_THROW(ops::round_activations(s, ops::f32_rows(b, 1, 48), ops::f32_rows(b, 1, 48), ops::ActRounding::Q8_32), ops::ShapeError);
    s.submit_and_wait();
    EXPECT_EQ(ops::activation_rounding(gguf::TensorType::Q4_0), ops::ActRounding::Q8_32);
    EXPECT_EQ(ops::activation_rounding(gguf::TensorType::Q6_K), ops::ActRounding::Q8_256);
    EXPECT_EQ(ops::activation_rounding(gguf::TensorType::F16), ops::ActRounding::F16);
    EXPECT_EQ(ops::activation_rounding(gguf::TensorType::F32), ops::ActRounding::None);
}

}  // namespace
}  // namespace vkllm
