// Residual-stream edits on the GPU against the CPU reference: every mode, several edits of the
// same channel in order, and the Mean mode's running (sum, count) across calls.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/ref_ops.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/ops.h"
#include "test_support.h"

namespace vkllm {
namespace {

class ResidualEdit : public test::GpuTest {};

std::vector<ops::ChannelEdit> to_gpu(const std::vector<cpu::ChannelEdit>& edits) {
    std::vector<ops::ChannelEdit> g;
    for (const auto& e : edits) {
        ops::ChannelEdit x;
        x.channel = uint32_t(e.channel);
        x.mode = uint32_t(e.mode);
        x.value = e.value;
        g.push_back(x);
    }
    return g;
}

TEST_F(ResidualEdit, MatchesTheReferenceOverSeveralCalls) {
    using M = cpu::ChannelEdit;
    // Odd shapes: more tokens than the workgroup has threads, and a single token.
    const int64_t shapes[][2] = {{1, 7}, {13, 33}, {131, 65}};
    const std::vector<cpu::ChannelEdit> edits = {
        {3, M::Mean, 0}, {0, M::Zero, 0}, {5, M::Value, 2.5f}, {6, M::Scale, -3.0f},
        {5, M::Scale, 0.5f},  // after the Value edit of the same channel: 1.25
        {6, M::Mean, 0},      // the mean of the scaled values
        {1, M::Mean, 0},
    };
    for (auto [tokens, n] : shapes) {
        gpu::Buffer eb(ctx(), edits.size() * sizeof(ops::ChannelEdit), gpu::Memory::Host);
        auto g = to_gpu(edits);
        std::memcpy(eb.mapped(), g.data(), eb.size());
        gpu::Buffer state(ctx(), edits.size() * 2 * 4, gpu::Memory::Device);
        std::vector<double> ref_state(edits.size() * 2, 0.0);
        gpu::Buffer xb(ctx(), uint64_t(tokens * n) * 4, gpu::Memory::Device);
        gpu::Stream s(ctx());
        s.begin();
        s.fill_zero(state);
        s.submit_and_wait();
        // Three calls: the running means must take every call's tokens.
        for (int call = 0; call < 3; ++call) {
            const int64_t rows = call == 1 ? 1 : tokens;
            auto x = test::random_floats(size_t(rows * n), uint32_t(7 * call + n), -4.0f, 4.0f);
            xb.upload(x.data(), x.size() * 4);
            s.begin();
            // In two parts (as the forward applies one layer's edits): first..first+n_edits.
            ops::residual_edit(s, ops::f32_rows(xb, rows, n), eb, 0, 3, state);
            s.barrier("the first edits are done before the rest");
            ops::residual_edit(s, ops::f32_rows(xb, rows, n), eb, 3, int(edits.size()) - 3, state);
            s.submit_and_wait();
            std::vector<float> got(x.size());
            xb.download(got.data(), got.size() * 4);
            std::vector<float> want = x;
            cpu::residual_edit(want.data(), rows, n, edits.data(), int(edits.size()), ref_state.data());
            for (size_t i = 0; i < got.size(); ++i)
                ASSERT_NEAR(got[i], want[i], 1e-5f * (1.0f + std::fabs(want[i])))
                    << rows << "x" << n << " call " << call << " index " << i;
            // The edited channels changed; the others did not.
            for (int64_t t = 0; t < rows; ++t) {
                EXPECT_EQ(got[size_t(t * n + 0)], 0.0f);
                EXPECT_FLOAT_EQ(got[size_t(t * n + 5)], 1.25f);
                EXPECT_EQ(got[size_t(t * n + 2)], x[size_t(t * n + 2)]);
            }
        }
    }
}

TEST_F(ResidualEdit, RejectsBadArguments) {
    gpu::Buffer x(ctx(), 64, gpu::Memory::Device), e(ctx(), 16, gpu::Memory::Host), st(ctx(), 8, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    EXPECT_THROW(ops::residual_edit(s, ops::f32_rows(x, 2, 0), e, 0, 1, st), ops::ShapeError);
    EXPECT_THROW(ops::residual_edit(s, ops::f32_rows(x, 2, 4), e, 0, 2, st), ops::ShapeError);  // 2 edits, room for 1
    EXPECT_THROW(ops::residual_edit(s, ops::f32_rows(x, 5, 4), e, 0, 1, st), ops::ShapeError);  // x too small
    s.submit_and_wait();
}

}  // namespace
}  // namespace vkllm
