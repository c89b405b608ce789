// LFM2's gated short convolution on ssm_conv (in_gate and out_gate: y = c * conv(b * x)) against
// the CPU reference cpu::short_conv_gated, with b, c and x the three thirds of in_proj's row as
// llama.cpp's build_shortconv_block splits it: odd channel counts, a prompt and then decode
// steps carrying the state, compared with one pass.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cpu/ref_ssm.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "op_test_data.h"
#include "ops/ssm_ops.h"
#include "test_support.h"

namespace vkllm {
namespace {

class ShortConv : public test::GpuTest {
protected:
    gpu::Buffer upload(const std::vector<float>& v) { return test::upload(ctx(), v); }
    std::vector<float> download(const gpu::Buffer& b) { return test::download(b); }

    // Tokens in calls ending at each of `splits`; y and the final state against one reference pass.
    void check(int64_t n_tokens, int64_t channels, int64_t d_conv, const std::vector<int64_t>& splits) {
        const int64_t stride = 3 * channels + 2;  // b | c | x | padding
        const uint32_t seed = uint32_t(n_tokens * 17 + channels + d_conv);
        auto bcx = test::random_floats(size_t(n_tokens * stride), seed, -2.0f, 2.0f);
        auto w = test::random_floats(size_t(channels * d_conv), seed + 1);
        auto st = test::random_floats(size_t(channels * (d_conv - 1)), seed + 2);
        std::vector<float> ref_st = st, ref_y(size_t(n_tokens * channels));
        cpu::short_conv_gated(bcx.data(), bcx.data() + channels, bcx.data() + 2 * channels, stride, ref_st.data(),
                              w.data(), ref_y.data(), channels, n_tokens, channels, d_conv);

        gpu::Buffer xb = upload(bcx), wb = upload(w), sb = upload(st);
        gpu::Buffer yb(ctx(), ref_y.size() * 4, gpu::Memory::Device);
        gpu::Stream s(ctx());
        s.begin();
        int64_t t0 = 0;
        for (int64_t t1 : splits) {
            const int64_t n = t1 - t0;
            const uint64_t row = uint64_t(t0 * stride);
            ops::SsmConvArgs a;
            a.x = ops::f32_rows(xb, n, channels, row + uint64_t(2 * channels), stride);
            a.in_gate = ops::f32_rows(xb, n, channels, row, stride);
            a.out_gate = ops::f32_rows(xb, n, channels, row + uint64_t(channels), stride);
            a.state = ops::f32_rows(sb, channels, d_conv - 1);
            a.w = ops::f32_rows(wb, channels, d_conv);
            a.silu = false;
            a.y = ops::f32_rows(yb, n, channels, uint64_t(t0 * channels));
            ops::ssm_conv(s, a);
            s.barrier("the next tokens read the state");
            t0 = t1;
        }
        s.submit_and_wait();
        const std::string what = std::to_string(n_tokens) + " tokens, " + std::to_string(channels) + " channels, d_conv " +
                                 std::to_string(d_conv) + ", " + std::to_string(splits.size()) + " calls";
        const auto got = download(yb);
        double m = 1.0;
        for (float r : ref_y) m = std::max(m, double(std::fabs(r)));
        EXPECT_LT(test::max_abs_diff(got, ref_y) / m, 1e-6) << what;
        EXPECT_EQ(download(sb), ref_st) << what;  // the products b * x, bit for bit
    }
};

TEST_F(ShortConv, MatchesReferenceForOddShapes) {
    check(1, 5, 3, {1});
    check(9, 37, 3, {9});
    check(6, 129, 4, {6});
    check(1, 70, 4, {1});  // fewer tokens than the state holds
}

TEST_F(ShortConv, PromptThenDecodeStepsEqualOnePass) {
    check(8, 41, 3, {1, 2, 3, 4, 5, 6, 7, 8});
    check(10, 33, 3, {7, 8, 9, 10});
}

}  // namespace
}  // namespace vkllm
