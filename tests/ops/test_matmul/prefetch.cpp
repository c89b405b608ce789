// The prompt matmuls' register double buffering (matmul_tile.glsl's PREFETCH, VKLLM_MATMUL_PREFETCH):
// reading each step's slices during the previous step's product puts the same slices in shared
// memory, so the tiled matmul and the grouped expert matmul give the same floats, bit for bit,
// with it and without it: odd shapes (rows and tokens that cut tiles, float rows that end inside
// a quad), each tile size the tokens pick on a CPU driver, a block-of-32 and a super-block type.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gguf/quant.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/matmul_tiles.h"
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

class MatmulPrefetch : public test::GpuTest {
protected:
    // y = x W^T for n_tokens random tokens, with the slices prefetched (1) or not (0).
    std::vector<float> matmul(const test::TestWeight& w, int64_t n_tokens, const char* prefetch) {
        test::ScopedEnv fp32_kernels("VKLLM_COOPMAT", "0");
        test::ScopedEnv env("VKLLM_MATMUL_PREFETCH", prefetch);
        const auto x = test::random_floats(size_t(n_tokens * w.n_in), uint32_t(n_tokens + w.n_in), -2.0f, 2.0f);
        gpu::Buffer xb = upload(ctx(), x);
        gpu::Buffer yb(ctx(), size_t(n_tokens * w.n_out) * 4, gpu::Memory::Device);
        gpu::Stream s(ctx());
        s.begin();
        ops::matmul(s, w.gpu(), ops::f32_rows(xb, n_tokens, w.n_in), ops::f32_rows(yb, n_tokens, w.n_out));
        s.submit_and_wait();
        return download(yb);
    }

    // The grouped expert matmul over n_tokens tokens routed to top_k of n_expert experts.
    std::vector<float> moe(TensorType type, int64_t n_in, int64_t n_out, int n_expert, int64_t n_tokens, int top_k,
                           const char* prefetch) {
        test::ScopedEnv fp32_kernels("VKLLM_COOPMAT", "0");
        test::ScopedEnv env("VKLLM_MATMUL_PREFETCH", prefetch);
        const auto values = test::random_floats(size_t(n_in * n_out * n_expert), 21);
        const std::vector<uint8_t> bytes = gguf::quantize(type, values.data(), values.size());
        gpu::Buffer wb(ctx(), ops::weight_buffer_bytes(type, n_in, n_out * n_expert), gpu::Memory::Device);
        wb.upload(bytes.data(), bytes.size());
        const ops::ExpertWeights w{type, &wb, n_in, n_out, n_expert};
        std::vector<int32_t> ids;
        for (int64_t t = 0; t < n_tokens; ++t)
            for (int k = 0; k < top_k; ++k) ids.push_back(int32_t((t * 5 + k * 3 + t / 3) % n_expert));
        const int64_t n_pairs = n_tokens * top_k;
        gpu::Buffer ib = upload(ctx(), ids);
        gpu::Buffer sb(ctx(), ops::moe_sort_ints(n_expert, n_pairs) * 4, gpu::Memory::Device);
        const auto x = test::random_floats(size_t(n_tokens * n_in), 22, -2.0f, 2.0f);
        gpu::Buffer xb = upload(ctx(), x);
        gpu::Buffer yb(ctx(), size_t(n_pairs * n_out) * 4, gpu::Memory::Device);
        const ops::MoeRouting r{&ib, nullptr, &sb, n_tokens, top_k};
        gpu::Stream s(ctx());
        s.begin();
        ops::moe_sort(s, ops::i32_vector(ib, n_pairs), n_expert,
                      ops::i32_vector(sb, int64_t(ops::moe_sort_ints(n_expert, n_pairs))));
        s.barrier("the sort before the grouped matmul");
        ops::moe_matmul(s, w, ops::f32_rows(xb, n_tokens, n_in), false, r, ops::f32_rows(yb, n_pairs, n_out));
        s.submit_and_wait();
        return download(yb);
    }
};


TEST_F(MatmulPrefetch, TiledMatmulGivesTheSameSums) {
    struct Case {
        TensorType type;
        int64_t n_in, n_out, n_tokens;
    };
    // 67 tokens take the 128 x 128 tile, 40 the 64 x 64 one, 17 64 x 32, 5 the smallest; F16 rows
    // of 100 end inside a slice and inside a quad of the last step.
    for (const Case& c : {Case{TensorType::F16, 100, 33, 67}, Case{TensorType::Q8_0, 96, 45, 40},
                          Case{TensorType::Q4_K, 512, 100, 17}, Case{TensorType::Q4_0, 64, 7, 5}}) {
        const test::TestWeight w = test::make_weight(ctx(), c.type, c.n_in, c.n_out, uint32_t(c.n_in + c.n_out));
        const std::string what = std::string(gguf::type_traits(c.type)->name) + " " + std::to_string(c.n_out) + " x " +
                                 std::to_string(c.n_in) + ", " + std::to_string(c.n_tokens) + " tokens";
        expect_bit_equal(matmul(w, c.n_tokens, "1"), matmul(w, c.n_tokens, "0"), what);
    }
}

TEST_F(MatmulPrefetch, GroupedExpertMatmulGivesTheSameSums) {
    expect_bit_equal(moe(TensorType::Q4_0, 96, 40, 4, 37, 2, "1"), moe(TensorType::Q4_0, 96, 40, 4, 37, 2, "0"),
                     "Q4_0 experts");
}

TEST_F(MatmulPrefetch, BadSwitchIsAClearError) {
    test::ScopedEnv env("VKLLM_MATMUL_PREFETCH", "yes");
    try {
        ops::matmul_prefetch(ctx().caps());
        FAIL() << "VKLLM_MATMUL_PREFETCH=yes was taken";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("VKLLM_MATMUL_PREFETCH=yes"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace vkllm
