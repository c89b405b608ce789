// Llama 4's weighted expert input against a direct CPU computation.
#include <gtest/gtest.h>

#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/ops.h"
#include "test_support.h"

namespace vkllm {
namespace {

class MoeWeightedInput : public test::GpuTest {};

TEST_F(MoeWeightedInput, ScalesEachPairsTokenRowByItsWeight) {
    for (auto [n_tokens, top_k, n] : {std::tuple{1, 1, 64}, std::tuple{5, 2, 33}, std::tuple{17, 4, 100}}) {
        const size_t pairs = size_t(n_tokens * top_k);
        auto x = test::random_floats(size_t(n_tokens * n) + 3, 1);
        auto w = test::random_floats(pairs, 2, 0.0f, 1.0f);
        std::vector<float> want(pairs * size_t(n));
        for (size_t p = 0; p < pairs; ++p)
            for (int c = 0; c < n; ++c) want[p * size_t(n) + size_t(c)] = w[p] * x[3 + (p / size_t(top_k)) * size_t(n) + size_t(c)];
        gpu::Buffer xb(ctx(), x.size() * 4, gpu::Memory::Device), wb(ctx(), pairs * 4, gpu::Memory::Device);
        gpu::Buffer ob(ctx(), want.size() * 4, gpu::Memory::Device);
        xb.upload(x.data(), x.size() * 4);
        wb.upload(w.data(), pairs * 4);
        ops::MoeRouting r;
        r.weights = &wb;
        r.n_tokens = n_tokens;
        r.top_k = top_k;
        gpu::Stream s(ctx());
        s.begin();
        ops::moe_weighted_input(s, ops::f32_rows(xb, r.n_tokens, n, 3), r, ops::f32_rows(ob, r.n_tokens * r.top_k, n));
        s.submit_and_wait();
        std::vector<float> got(want.size());
        ob.download(got.data(), got.size() * 4);
        EXPECT_EQ(got, want) << n_tokens << " tokens, top " << top_k;
    }
}

}  // namespace
}  // namespace vkllm
