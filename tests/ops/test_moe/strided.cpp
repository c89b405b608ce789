// The expert matvec (ops::moe_matmul without a sort) on rows of wider rows, as multi-head latent
// attention uses it: W_kb reads each (token, head)'s q_nope from the projection's [q_nope | q_rope]
// rows and writes its absorbed query into the attention query's [q_abs | q_rope] row. Each output
// must equal, bit for bit, the packed-row product's, and nothing between the rows may change.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gguf/quant.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/ops.h"
#include "../op_test_data.h"
#include "test_support.h"

namespace vkllm {
namespace {

using gguf::TensorType;
using test::download;
using test::upload;

class MoeMatvecStrided : public test::GpuTest {
protected:
    // heads (token, head) rows routed by head, as MLA routes them; x rows n_in wide, xs apart
    // from element x0; y rows n_out wide, ys apart from element y0.
    void check(TensorType type, int64_t n_in, int64_t n_out, int n_head, int n_tokens, int64_t xs, int64_t ys,
               bool round_x) {
        SCOPED_TRACE(std::string(gguf::type_traits(type)->name) + " x stride " + std::to_string(xs) + ", y stride " +
                     std::to_string(ys) + (round_x ? ", rounded" : ""));
        const int64_t heads = int64_t(n_head) * n_tokens;
        const auto values = test::random_floats(size_t(n_in * n_out * n_head), 11);
        const std::vector<uint8_t> bytes = gguf::quantize(type, values.data(), values.size());
        gpu::Buffer wb(ctx(), ops::weight_buffer_bytes(type, n_in, n_out * n_head), gpu::Memory::Device);
        wb.upload(bytes.data(), bytes.size());
        const ops::ExpertWeights w{type, &wb, n_in, n_out, n_head};
        std::vector<int32_t> ids;
        for (int64_t p = 0; p < heads; ++p) ids.push_back(int32_t(p % n_head));
        const ops::MoeRouting r{nullptr, nullptr, nullptr, n_tokens, n_head};
        gpu::Buffer ib = upload(ctx(), ids);
        ops::MoeRouting route = r;
        route.experts = &ib;

        const uint64_t x0 = 3, y0 = 5;
        const auto wide_x = test::random_floats(size_t(x0 + heads * xs), 12, -2.0f, 2.0f);
        std::vector<float> packed_x(size_t(heads * n_in));
        for (int64_t p = 0; p < heads; ++p)
            for (int64_t i = 0; i < n_in; ++i) packed_x[size_t(p * n_in + i)] = wide_x[size_t(x0 + p * xs + i)];
        const std::vector<float> sentinel(size_t(y0 + heads * ys), -7.25f);
        gpu::Buffer xw = upload(ctx(), wide_x), xp = upload(ctx(), packed_x), yw = upload(ctx(), sentinel);
        gpu::Buffer yp(ctx(), size_t(heads * n_out) * 4, gpu::Memory::Device);
        gpu::Stream s(ctx());
        s.begin();
        ops::moe_matmul(s, w, ops::f32_rows(xw, heads, n_in, x0, xs), true, route, ops::f32_rows(yw, heads, n_out, y0, ys),
                        round_x);
        ops::moe_matmul(s, w, ops::f32_rows(xp, heads, n_in), true, route, ops::f32_rows(yp, heads, n_out), round_x);
        s.submit_and_wait();
        const std::vector<float> got = download(yw), want = download(yp);
        for (int64_t p = 0; p < heads; ++p)
            for (int64_t o = 0; o < ys; ++o) {
                const float v = got[size_t(y0 + p * ys + o)];
                if (o < n_out) ASSERT_EQ(v, want[size_t(p * n_out + o)]) << "pair " << p << " row " << o;
                else ASSERT_EQ(v, -7.25f) << "pair " << p << ": element " << o << " past the row was written";
            }
        for (uint64_t e = 0; e < y0; ++e) ASSERT_EQ(got[e], -7.25f) << "element " << e << " before y was written";
    }
};

TEST_F(MoeMatvecStrided, EqualsPackedRowsBitForBit) {
    check(TensorType::F32, 48, 40, 4, 2, /*xs=*/72, /*ys=*/56, false);   // MLA's shapes, smaller
    check(TensorType::Q8_0, 64, 24, 3, 1, /*xs=*/97, /*ys=*/30, true);   // odd strides, x rounded in the shader
}

// The tiled kernel (with a sort) still takes packed rows only, and says so.
TEST_F(MoeMatvecStrided, TiledPathRefusesStridedRows) {
    gpu::Buffer wb(ctx(), ops::weight_buffer_bytes(TensorType::F32, 32, 8 * 2), gpu::Memory::Device);
    const ops::ExpertWeights w{TensorType::F32, &wb, 32, 8, 2};
    gpu::Buffer ib = upload(ctx(), std::vector<int32_t>{0, 1, 0, 1, 0, 1, 0, 1});
    gpu::Buffer sb(ctx(), ops::moe_sort_ints(2, 8) * 4, gpu::Memory::Device);
    gpu::Buffer xb(ctx(), 8 * 64 * 4, gpu::Memory::Device), yb(ctx(), 8 * 8 * 4, gpu::Memory::Device);
    const ops::MoeRouting r{&ib, nullptr, &sb, 8, 1};
    gpu::Stream s(ctx());
    s.begin();
    EXPECT_THROW(ops::moe_matmul(s, w, ops::f32_rows(xb, 8, 32, 0, 64), false, r, ops::f32_rows(yb, 8, 8)),
                 ops::ShapeError);
    s.submit_and_wait();
}

}  // namespace
}  // namespace vkllm
