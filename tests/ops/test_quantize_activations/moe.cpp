// The expert matvecs of MoE decode reading x quantized beforehand (ops::moe_matvec_quantized,
// moe_matvec_swiglu_quantized): the tokens' (or pairs') inputs quantized once by
// quantize_activations, every workgroup reading the quants.
//   - The float dot of scale * quant equals, bit for bit, the expert matvec of x rounded by
//     round_activations (the same values summed in the same order at the same workgroup shape):
//     blocks of 32 (Q4_0, its bias term; also with grouped blocks) and of 256 (Q4_K, its
//     minimum), plain and fused with SwiGLU, inputs per token and per pair, y rows strided.
//   - The int8 dot of the ready quants (where the device has it) equals that up to float
//     summation: Q4_0, Q8_0, Q4_K and Q6_K, and the fused SwiGLU.
//   - Experts split over binding windows give the same, and bad inputs are refused.
// Each pipeline is a cold lavapipe compile of seconds: the per-type dot code is the one the
// dense XQ matvec (test_quantize_activations) and the expert matvec (test_moe) check for every type.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gguf/quant.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/ops.h"
#include "../op_test_data.h"
#include "bit_equal.h"
#include "test_support.h"

namespace vkllm {
namespace {

using gguf::TensorType;
using test::download;
using test::upload;

// Gate and up experts {n_in, n_out, n_expert} of one type in one buffer, gate at byte 256 and up
// after it on a 256-byte boundary (as the forward uploads them), optionally with grouped blocks.
struct ExpertPair {
    TensorType type;
    int64_t n_in, n_out, n_expert;
    bool grouped = false;
    gpu::Buffer buffer;
    uint64_t gate_offset = 256, up_offset = 0;

    ops::ExpertWeights gate() const { return {type, &buffer, n_in, n_out, n_expert, nullptr, gate_offset, grouped}; }
    ops::ExpertWeights up() const { return {type, &buffer, n_in, n_out, n_expert, nullptr, up_offset, grouped}; }
};

std::unique_ptr<ExpertPair> make_pair(gpu::Context& ctx, TensorType type, int64_t n_in, int64_t n_out,
                                      int64_t n_expert, bool grouped = false) {
    auto p = std::make_unique<ExpertPair>(ExpertPair{type, n_in, n_out, n_expert, grouped});
    const int64_t rows = n_out * n_expert;
    const uint64_t bytes = ops::weight_buffer_bytes(type, n_in, rows);
    p->up_offset = (p->gate_offset + bytes + 255) / 256 * 256;
    p->buffer = gpu::Buffer(ctx, p->up_offset + bytes, gpu::Memory::Device);
    for (uint64_t offset : {p->gate_offset, p->up_offset}) {
        const auto values = test::random_floats(size_t(n_in * rows), uint32_t(offset + n_in), -1.0f, 1.0f);
        std::vector<uint8_t> q = gguf::quantize(type, values.data(), values.size());
        if (grouped) {
            std::vector<uint8_t> g(q.size());
            ops::group_blocks(type, n_in, rows, q.data(), g.data());
            q = g;
        }
        p->buffer.upload(q.data(), q.size(), offset);
    }
    return p;
}

std::vector<int32_t> random_routing(int64_t n_tokens, int top_k, int n_expert, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> pool(static_cast<size_t>(n_expert)), ids;
    for (int e = 0; e < n_expert; ++e) pool[size_t(e)] = e;
    for (int64_t t = 0; t < n_tokens; ++t) {
        std::shuffle(pool.begin(), pool.end(), rng);
        ids.insert(ids.end(), pool.begin(), pool.begin() + top_k);
    }
    return ids;
}

// One routed step's outputs, packed [n_pairs, n_out]: through the quantized x, and through x
// rounded by round_activations into the float expert matvec.
struct Outputs {
    std::vector<float> quantized, rounded;
};

constexpr uint64_t kYOffset = 5, kYPad = 3;  // y rows n_out + kYPad apart, from element kYOffset
constexpr float kSentinel = -7.25f;

// glu: the fused gate/up/SwiGLU op, else the gate experts alone.
Outputs run(gpu::Context& ctx, const ExpertPair& e, bool glu, int64_t n_tokens, int top_k, bool x_per_pair) {
    const std::vector<int32_t> ids = random_routing(n_tokens, top_k, int(e.n_expert), uint32_t(n_tokens * 7 + top_k));
    const int64_t n_pairs = int64_t(ids.size()), x_rows = x_per_pair ? n_pairs : n_tokens;
    auto x = test::random_floats(size_t(x_rows * e.n_in), uint32_t(e.n_in + n_tokens), -2.0f, 2.0f);
    x[size_t(e.n_in / 3)] = 150.0f;                                          // a block scaled by one value
    for (int64_t i = 0; i < 32; ++i) x[size_t((x_rows - 1) * e.n_in + i)] = 0.0f;  // a zero block: scale 0
    const ops::ActRounding mode = ops::activation_rounding(e.type);
    gpu::Buffer xb = upload(ctx, x), ib = upload(ctx, ids);
    gpu::Buffer qb(ctx, size_t(x_rows * e.n_in) * 2 + 64, gpu::Memory::Device);
    gpu::Buffer rb(ctx, x.size() * 4, gpu::Memory::Device);
    const uint64_t ys = uint64_t(e.n_out) + kYPad;
    gpu::Buffer yq = upload(ctx, std::vector<float>(kYOffset + size_t(n_pairs) * ys, kSentinel));
    gpu::Buffer yr(ctx, size_t(n_pairs * e.n_out) * 4, gpu::Memory::Device);
    const ops::QuantizedActs q = ops::quantized_acts(qb, mode, x_rows, e.n_in);
    const ops::MoeRouting r{&ib, nullptr, nullptr, n_tokens, top_k};
    const ops::TensorView xv = ops::f32_rows(xb, x_rows, e.n_in), rv = ops::f32_rows(rb, x_rows, e.n_in);
    const ops::TensorView yqv = ops::f32_rows(yq, n_pairs, e.n_out, kYOffset, int64_t(ys));
    const ops::TensorView yrv = ops::f32_rows(yr, n_pairs, e.n_out);
    gpu::Stream s(ctx);
    s.begin();
    ops::quantize_activations(s, xv, q);
    ops::round_activations(s, xv, rv, mode);
    s.barrier("x quantized and rounded before the expert matvecs read them");
    if (glu) {
        ops::moe_matvec_swiglu_quantized(s, e.gate(), e.up(), q, x_per_pair, r, yqv);
        ops::moe_matvec_swiglu(s, e.gate(), e.up(), rv, x_per_pair, r, yrv);
    } else {
        ops::moe_matvec_quantized(s, e.gate(), q, x_per_pair, r, yqv);
        ops::moe_matmul(s, e.gate(), rv, x_per_pair, r, yrv);
    }
    s.submit_and_wait();
    const std::vector<float> all = download(yq);
    Outputs out{{}, download(yr)};
    for (size_t i = 0; i < all.size(); ++i) {
        const size_t at = i - kYOffset;
        const bool in_y = i >= kYOffset && at % ys < size_t(e.n_out);
        if (in_y)
            out.quantized.push_back(all[i]);
        else
            EXPECT_EQ(all[i], kSentinel) << "y[" << i << "] outside the rows changed";
    }
    return out;
}

std::string name_of(TensorType t) { return gguf::type_traits(t)->name; }

class MoeMatvecQuantized : public test::GpuTest {
protected:
    // A context whose matvecs take the float dot (the shared one unless it has the int8 path).
    gpu::Context& float_ctx() {
        if (!ctx().caps().integer_dot_matvec) return ctx();
        if (!float_) float_ = test::context_with_integer_dot(0);
        return *float_;
    }

private:
    std::unique_ptr<gpu::Context> float_;
};

TEST_F(MoeMatvecQuantized, FloatDotEqualsTheRoundedInputBitForBit) {
    gpu::Context& c = float_ctx();
    struct Case {
        TensorType type;
        int64_t n_in;
        bool grouped;
    };
    for (const Case& k : {Case{TensorType::Q4_0, 96, false}, Case{TensorType::Q4_0, 256, true},
                          Case{TensorType::Q4_K, 512, false}}) {
        const auto e = make_pair(c, k.type, k.n_in, 37, 6, k.grouped);
        for (bool glu : {false, true})
            for (int64_t n_tokens : {1, 2})
                for (bool per_pair : {false, true}) {
                    SCOPED_TRACE(name_of(k.type) + (k.grouped ? " grouped" : "") + (glu ? " swiglu, " : ", ") +
                                 std::to_string(n_tokens) + " tokens" + (per_pair ? ", x per pair" : ""));
                    const Outputs o = run(c, *e, glu, n_tokens, 2, per_pair);
                    test::expect_bit_equal(o.quantized, o.rounded, "quantized x against rounded x");
                }
    }
}

// lavapipe has the integer dot product, the mobile clamp does not (the test then has nothing to run).
TEST_F(MoeMatvecQuantized, IntegerDotMatchesTheFloatDot) {
    auto idot = test::context_with_integer_dot(1);
    if (!idot->caps().integer_dot_matvec) GTEST_SKIP() << "the device has no integer dot product";
    struct Case {
        TensorType type;
        int64_t n_in;
        bool glu;
    };
    for (const Case& k : {Case{TensorType::Q4_0, 160, false}, Case{TensorType::Q8_0, 96, true},
                          Case{TensorType::Q4_K, 512, false}, Case{TensorType::Q6_K, 768, false},
                          Case{TensorType::Q4_K, 256, true}}) {
        SCOPED_TRACE(name_of(k.type) + (k.glu ? " swiglu" : ""));
        const auto e = make_pair(*idot, k.type, k.n_in, 21, 5);
        for (bool per_pair : {false, true}) {
            const Outputs o = run(*idot, *e, k.glu, 2, 2, per_pair);
            EXPECT_LT(test::nmse(o.quantized, o.rounded), 1e-10) << (per_pair ? "x per pair" : "x per token");
        }
    }
}

// A binding limit below the experts' size: windows of whole experts, then row windows of one.
TEST_F(MoeMatvecQuantized, SplitsExpertsOverBindingWindows) {
    gpu::Context& c = float_ctx();
    const uint64_t align = std::max<uint64_t>(c.caps().min_storage_buffer_offset_alignment, 4);
    const auto q4 = make_pair(c, TensorType::Q4_0, 64, 20, 8);  // 720 bytes per expert
    {
        test::ScopedEnv env("VKLLM_MAX_BINDING_BYTES", std::to_string(2 * align + 16 + 2600));  // three experts
        const Outputs o = run(c, *q4, false, 1, 3, false);
        test::expect_bit_equal(o.quantized, o.rounded, "quantized x against rounded x");
    }
    {
        test::ScopedEnv env("VKLLM_MAX_BINDING_BYTES", std::to_string(2 * align + 16 + 400));  // 11 rows
        const Outputs o = run(c, *q4, false, 1, 2, false);
        test::expect_bit_equal(o.quantized, o.rounded, "quantized x against rounded x");
    }
}

TEST_F(MoeMatvecQuantized, RefusesMismatchedInputs) {
    const auto q4 = make_pair(ctx(), TensorType::Q4_0, 64, 4, 3);
    const auto f16 = make_pair(ctx(), TensorType::F16, 64, 4, 3);
    const auto q4k = make_pair(ctx(), TensorType::Q4_K, 256, 4, 3);
    gpu::Buffer qb(ctx(), 4096, gpu::Memory::Device), yb(ctx(), 256, gpu::Memory::Device);
    gpu::Buffer ib = upload(ctx(), std::vector<int32_t>{0, 2});
    const ops::MoeRouting r{&ib, nullptr, nullptr, 1, 2};
    const ops::QuantizedActs q32 = ops::quantized_acts(qb, ops::ActRounding::Q8_32, 1, 64);
    const ops::QuantizedActs two = ops::quantized_acts(qb, ops::ActRounding::Q8_32, 2, 64);
    const ops::QuantizedActs q256 = ops::quantized_acts(qb, ops::ActRounding::Q8_256, 1, 256);
    const ops::TensorView y = ops::f32_rows(yb, 2, 4);
    gpu::Stream s(ctx());
    s.begin();
    EXPECT_THROW(ops::moe_matvec_quantized(s, q4k->gate(), q32, false, r, y), ops::ShapeError);  // other blocks
    EXPECT_THROW(ops::moe_matvec_quantized(s, q4->gate(), q256, false, r, y), ops::ShapeError);
    EXPECT_THROW(ops::moe_matvec_quantized(s, f16->gate(), q32, false, r, y), ops::ShapeError);  // F16 reads floats
    EXPECT_THROW(ops::moe_matvec_quantized(s, q4->gate(), two, false, r, y), ops::ShapeError);   // a row per token
    EXPECT_THROW(ops::moe_matvec_quantized(s, q4->gate(), q32, true, r, y), ops::ShapeError);    // a row per pair
    EXPECT_THROW(ops::moe_matvec_quantized(s, q4->gate(), q32, false, r, ops::f32_rows(qb, 2, 4)), ops::ShapeError);
    EXPECT_THROW(ops::moe_matvec_quantized(s, q4->gate(), q32, false, r, ops::f32_rows(yb, 1, 4)), ops::ShapeError);
    EXPECT_THROW(ops::moe_matvec_swiglu_quantized(s, q4->up(), q4->gate(), q32, false, r, y), ops::ShapeError);
    s.submit_and_wait();
}

}  // namespace
}  // namespace vkllm
