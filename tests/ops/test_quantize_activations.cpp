// Activations quantized once for decode's matvecs (ops::quantize_activations) and the matvecs
// that read them (ops::matvec_quantized, matvec_swiglu_quantized):
//   - the quants and sums equal the CPU reference's (cpu::quantize_activations), the scales to
//     the ulp of a shader division, and scale * quant is today's rounding dispatch's value
//     (round_act.comp) bit for bit: blocks of 32 and 256, one row and several, at an offset, with
//     an all-zero block and a block led by a negative value; with the norm folded in they equal
//     rms_norm's output quantized, bit for bit (the same sums in the same order);
//   - each matvec path (the float dot of scale * quant for blocks of 32 and of 256, the int8 dot,
//     the GLU variant) against the CPU reference's product of the dequantized weight and x
//     rounded by cpu::round_activations, on odd shapes.
// Every pipeline is a cold lavapipe compile of seconds, so each path is checked on one type: the
// per-type dot code is the plain matvec's, which test_matmul checks for every type.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/ref_ops.h"
#include "gguf/quant.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/ops.h"
#include "op_test_data.h"
#include "test_support.h"
#include "test_weight.h"

namespace vkllm {
namespace {

using gguf::TensorType;
using test::download;
using test::upload;

// Block kind, block and sum group of a mode.
int block_of(ops::ActRounding mode) { return mode == ops::ActRounding::Q8_32 ? 32 : 256; }

// x's quants, scales and sums as cpu::quantize_activations gives them, row by row.
struct Quantized {
    std::vector<int8_t> q;
    std::vector<float> scales;
    std::vector<int32_t> sums;
};

Quantized cpu_quantized(const std::vector<float>& x, ops::ActRounding mode) {
    const int block = block_of(mode), group = block == 32 ? 32 : 16;
    Quantized r{std::vector<int8_t>(x.size()), std::vector<float>(x.size() / size_t(block)),
                std::vector<int32_t>(x.size() / size_t(group))};
    cpu::quantize_activations(x.data(), int64_t(x.size()), block, r.q.data(), r.scales.data(), r.sums.data());
    return r;
}

// The three streams of q, read back.
Quantized gpu_quantized(const gpu::Buffer& b, const ops::QuantizedActs& q) {
    const size_t n = size_t(q.rows * q.n);
    Quantized r{std::vector<int8_t>(n), std::vector<float>(n / size_t(q.block())),
                std::vector<int32_t>(n / size_t(q.sum_group()))};
    b.download(r.q.data(), r.q.size(), q.offset);
    b.download(r.scales.data(), r.scales.size() * 4, q.scales_offset());
    b.download(r.sums.data(), r.sums.size() * 4, q.sums_offset());
    return r;
}

// Quants and sums equal, scales within two ulps: a shader's division (div_rn: the driver's
// quotient corrected by one step) is not always the IEEE quotient (lavapipe: an ulp off now and
// then), and Q8_K's scale 1 / (-127 / m) shows two divisions' errors as they are (Q8_0's fp16
// scale absorbs them). round_act.comp divides the same way, so the values below are today's.
void expect_same_quants(const Quantized& got, const Quantized& want) {
    ASSERT_EQ(got.q, want.q);
    ASSERT_EQ(got.sums, want.sums);
    ASSERT_EQ(got.scales.size(), want.scales.size());
    for (size_t i = 0; i < got.scales.size(); ++i) {
        int32_t a = 0, b = 0;
        std::memcpy(&a, &got.scales[i], 4);
        std::memcpy(&b, &want.scales[i], 4);
        ASSERT_LE(std::abs(a - b), 2) << "scale " << i << ": " << got.scales[i] << " against " << want.scales[i];
    }
}

void expect_bit_equal(const Quantized& got, const Quantized& want) {
    ASSERT_EQ(got.q, want.q);
    ASSERT_EQ(got.sums, want.sums);
    ASSERT_EQ(got.scales.size(), want.scales.size());
    for (size_t i = 0; i < got.scales.size(); ++i)  // bits: -0 and 0 apart
        ASSERT_EQ(std::memcmp(&got.scales[i], &want.scales[i], 4), 0) << "scale " << i << ": " << got.scales[i]
                                                                      << " against " << want.scales[i];
}

class QuantizeActivations : public test::GpuTest {};

TEST_F(QuantizeActivations, MatchTheCpuReferenceBitForBit) {
    for (ops::ActRounding mode : {ops::ActRounding::Q8_32, ops::ActRounding::Q8_256}) {
        const int block = block_of(mode);
        for (auto [rows, n] : {std::pair<int64_t, int64_t>{1, 3 * block}, {3, 5 * block}}) {
            SCOPED_TRACE("block " + std::to_string(block) + ", " + std::to_string(rows) + " x " + std::to_string(n));
            auto x = test::random_floats(size_t(rows * n), uint32_t(rows * 11 + block), -3.0f, 3.0f);
            for (int j = 0; j < block; ++j) x[size_t(block + j)] = 0.0f;  // an all-zero block
            x[size_t(2 * block + 7)] = -40.0f;                           // a block led by a negative value
            x[size_t(2 * block + 9)] = 40.0f;                            // ... and its tie, later
            x[3] = 1e-3f;                                                // tiny values beside large ones
            const uint64_t x_offset = 3;  // x at element 3 of its buffer
            std::vector<float> padded(size_t(x_offset), 9.0f);
            padded.insert(padded.end(), x.begin(), x.end());
            gpu::Buffer xb = upload(ctx(), padded);
            gpu::Buffer qb(ctx(), size_t(rows * n) * 2 + 256, gpu::Memory::Device);
            const ops::QuantizedActs q = ops::quantized_acts(qb, mode, rows, n, /*offset=*/48);
            gpu::Stream s(ctx());
            s.begin();
            ops::quantize_activations(s, ops::f32_rows(xb, rows, n, x_offset), q);
            s.submit_and_wait();
            const Quantized got = gpu_quantized(qb, q), want = cpu_quantized(x, mode);
            expect_same_quants(got, want);
            // Today's rounding dispatch (round_act.comp, the same arithmetic) gives scale * quant.
            gpu::Buffer rounded(ctx(), padded.size() * 4, gpu::Memory::Device);
            s.begin();
            ops::round_activations(s, ops::f32_rows(xb, rows, n, x_offset), ops::f32_rows(rounded, rows, n), mode);
            s.submit_and_wait();
            const std::vector<float> y = download<float>(rounded, x.size());
            for (size_t i = 0; i < x.size(); ++i) {
                const float v = got.scales[i / size_t(block)] * float(got.q[i]);
                // Bit for bit, but for the sign of a zero (a zero quant of a negative x).
                ASSERT_TRUE(std::memcmp(&v, &y[i], 4) == 0 || (v == 0.0f && y[i] == 0.0f))
                    << "element " << i << ": " << v << " against " << y[i];
            }
        }
    }
}

TEST_F(QuantizeActivations, FoldedNormEqualsRmsNormThenQuantize) {
    const int64_t n = 1280;  // rms_norm's wider workgroup (n >= 1024), which the fold takes too
    const auto x = test::random_floats(size_t(n), 5, -2.0f, 2.0f), w = test::random_floats(size_t(n), 6, 0.5f, 1.5f);
    gpu::Buffer xb = upload(ctx(), x), wb = upload(ctx(), w), normed(ctx(), size_t(n) * 4, gpu::Memory::Device);
    for (ops::ActRounding mode : {ops::ActRounding::Q8_32, ops::ActRounding::Q8_256}) {
        gpu::Buffer folded_b(ctx(), size_t(n) * 2 + 64, gpu::Memory::Device), plain_b(ctx(), size_t(n) * 2 + 64, gpu::Memory::Device);
        const ops::QuantizedActs folded = ops::quantized_acts(folded_b, mode, 1, n), plain = ops::quantized_acts(plain_b, mode, 1, n);
        const ops::MatvecNorm norm{&wb, 0, 1e-5f};
        gpu::Stream s(ctx());
        s.begin();
        ops::quantize_activations(s, ops::f32_rows(xb, 1, n), folded, &norm);
        ops::rms_norm(s, ops::f32_rows(xb, 1, n), &wb, ops::f32_rows(normed, 1, n), 1e-5f);
        s.barrier("the norm is complete before it is quantized");
        ops::quantize_activations(s, ops::f32_rows(normed, 1, n), plain);
        s.submit_and_wait();
        expect_bit_equal(gpu_quantized(folded_b, folded), gpu_quantized(plain_b, plain));
        EXPECT_NE(gpu_quantized(folded_b, folded).q, cpu_quantized(x, mode).q) << "the norm changed nothing";
    }
}

TEST_F(QuantizeActivations, RefusesBadShapesAndLayouts) {
    gpu::Buffer b(ctx(), 4096, gpu::Memory::Device), x(ctx(), 4096, gpu::Memory::Device);
    EXPECT_THROW(ops::quantized_acts(b, ops::ActRounding::Q8_32, 1, 48), ops::ShapeError);   // not whole blocks
    EXPECT_THROW(ops::quantized_acts(b, ops::ActRounding::F16, 1, 64), ops::ShapeError);     // not a block kind
    EXPECT_THROW(ops::quantized_acts(b, ops::ActRounding::Q8_32, 1, 64, 8), ops::ShapeError);  // offset not on 16
    EXPECT_THROW(ops::quantized_acts(b, ops::ActRounding::Q8_256, 2, 2048), ops::ShapeError);  // past the buffer
    const ops::QuantizedActs q = ops::quantized_acts(b, ops::ActRounding::Q8_32, 2, 64);
    gpu::Stream s(ctx());
    s.begin();
    EXPECT_THROW(ops::quantize_activations(s, ops::f32_rows(x, 1, 64), q), ops::ShapeError);  // x 1 row, q 2
    const ops::MatvecNorm norm{&x, 0, 1e-5f};
    EXPECT_THROW(ops::quantize_activations(s, ops::f32_rows(x, 2, 64), q, &norm), ops::ShapeError);  // norm: one row
    s.submit_and_wait();
}

using test::make_weight;
using test::TestWeight;

// |got - want| within float summation error of the row's sum of |w x| (the int8 path scales
// exact integer sums once per block, the float path sums scaled products).
void expect_matches(const std::vector<float>& got, const std::vector<float>& want, const std::vector<float>& magnitude) {
    for (size_t o = 0; o < want.size(); ++o)
        ASSERT_NEAR(got[o], want[o], 2e-6f * magnitude[o] + 1e-6f) << "row " << o;
}

// The CPU reference of decode's product: x rounded as llama.cpp rounds it, then W x, and each
// row's sum of |w x| (the error scale).
void reference(const TestWeight& w, const std::vector<float>& x, std::vector<float>* y, std::vector<float>* magnitude) {
    std::vector<float> xr(x.size());
    cpu::round_activations(x.data(), xr.data(), int64_t(x.size()), block_of(ops::activation_rounding(w.type)));
    y->assign(size_t(w.n_out), 0.0f);
    cpu::matmul(w.cpu(), xr.data(), y->data(), 1);
    const std::vector<float> wf = gguf::dequantize(w.type, w.bytes.data(), size_t(w.n_in * w.n_out));
    magnitude->assign(size_t(w.n_out), 0.0f);
    for (int64_t o = 0; o < w.n_out; ++o)
        for (int64_t i = 0; i < w.n_in; ++i) (*magnitude)[size_t(o)] += std::fabs(wf[size_t(o * w.n_in + i)] * xr[size_t(i)]);
}

// matvec_quantized on ctx against the reference, y at an offset with accumulate off and on.
void check_matvec(gpu::Context& ctx, TensorType type, int64_t n_in, int64_t n_out) {
    SCOPED_TRACE(std::string(gguf::type_traits(type)->name) + " " + std::to_string(n_out) + " x " + std::to_string(n_in));
    ASSERT_TRUE(ops::matvec_reads_quantized(type));
    const TestWeight w = make_weight(ctx, type, n_in, n_out, uint32_t(n_in * 3 + n_out));
    auto x = test::random_floats(size_t(n_in), uint32_t(n_in + 1), -3.0f, 3.0f);
    x[size_t(n_in / 3)] = 250.0f;  // a block scaled by one large value
    for (int64_t e = n_in - 32; e < n_in; ++e) x[size_t(e)] = 0.0f;  // a zero run: scale 0
    std::vector<float> want, magnitude;
    reference(w, x, &want, &magnitude);
    const ops::ActRounding mode = ops::activation_rounding(type);
    gpu::Buffer xb = upload(ctx, x), qb(ctx, size_t(n_in) * 2 + 64, gpu::Memory::Device);
    gpu::Buffer yb(ctx, size_t(n_out + 5) * 4, gpu::Memory::Device);
    const ops::QuantizedActs q = ops::quantized_acts(qb, mode, 1, n_in);
    const std::vector<float> y0 = test::random_floats(size_t(n_out + 5), 3);
    yb.upload(y0.data(), y0.size() * 4);
    gpu::Stream s(ctx);
    s.begin();
    ops::quantize_activations(s, ops::f32_rows(xb, 1, n_in), q);
    s.barrier("x is quantized before the matvec reads it");
    ops::matvec_quantized(s, w.gpu(), q, ops::f32_rows(yb, 1, n_out, 5), /*accumulate=*/true);
    s.submit_and_wait();
    const std::vector<float> got = download(yb);
    for (size_t i = 0; i < 5; ++i) ASSERT_EQ(got[i], y0[i]) << "element " << i << " before y was written";
    std::vector<float> sum(want.size());
    for (size_t o = 0; o < want.size(); ++o) sum[o] = want[o] + y0[o + 5];
    expect_matches(std::vector<float>(got.begin() + 5, got.end()), sum, magnitude);
}

class MatvecQuantized : public test::GpuTest {};

// Blocks of 32 and the float dot of scale * quant (Q4_0: the bias term too), blocks of 256 (Q4_K).
TEST_F(MatvecQuantized, FloatDotMatchesTheCpuReference) {
    // The shared context unless it takes the int8 path (a device where it is accelerated).
    auto own = ctx().caps().integer_dot_matvec ? test::context_with_integer_dot(0) : nullptr;
    check_matvec(own ? *own : ctx(), TensorType::Q4_0, 96, 131);
    check_matvec(ctx(), TensorType::Q4_K, 768, 7);
}

// The int8 dot of the ready quants with their sums: blocks of 32 (Q4_0's bias), and the
// K-quants' blocks of 256 with their 16-element sums (Q4_K's minimum, Q6_K's bias); lavapipe has
// the instruction, the mobile clamp does not (the test then has nothing to run).
TEST_F(MatvecQuantized, IntegerDotMatchesTheCpuReference) {
    auto idot = test::context_with_integer_dot(1);
    if (!idot->caps().integer_dot_matvec) GTEST_SKIP() << "the device has no integer dot product";
    check_matvec(*idot, TensorType::Q4_0, 160, 37);
    check_matvec(*idot, TensorType::Q4_K, 512, 9);
    check_matvec(*idot, TensorType::Q6_K, 768, 5);
    check_matvec(*idot, TensorType::Q2_K, 512, 11);
    check_matvec(*idot, TensorType::Q3_K, 768, 6);
}

// Gate and up against one quantized x: silu(gate x) * (up x), Q6_K (blocks of 256).
TEST_F(MatvecQuantized, SwigluMatchesTheCpuReference) {
    const int64_t n_in = 512, n_out = 19;
    const TestWeight g = make_weight(ctx(), TensorType::Q6_K, n_in, n_out, 41), u = make_weight(ctx(), TensorType::Q6_K, n_in, n_out, 42);
    const uint64_t up_offset = (g.bytes.size() + 255) / 256 * 256;
    gpu::Buffer pair(ctx(), up_offset + ops::weight_buffer_bytes(TensorType::Q6_K, n_in, n_out), gpu::Memory::Device);
    pair.upload(g.bytes.data(), g.bytes.size());
    pair.upload(u.bytes.data(), u.bytes.size(), up_offset);
    const ops::Weight gw{TensorType::Q6_K, &pair, n_in, n_out, 0}, uw{TensorType::Q6_K, &pair, n_in, n_out, up_offset};
    const auto x = test::random_floats(size_t(n_in), 43, -2.0f, 2.0f);
    std::vector<float> rg, ru, mg, mu;
    reference(g, x, &rg, &mg);
    reference(u, x, &ru, &mu);
    gpu::Buffer xb = upload(ctx(), x), qb(ctx(), size_t(n_in) * 2 + 64, gpu::Memory::Device),
                yb(ctx(), size_t(n_out) * 4, gpu::Memory::Device);
    const ops::QuantizedActs q = ops::quantized_acts(qb, ops::ActRounding::Q8_256, 1, n_in);
    gpu::Stream s(ctx());
    s.begin();
    ops::quantize_activations(s, ops::f32_rows(xb, 1, n_in), q);
    s.barrier("x is quantized before the matvec reads it");
    ops::matvec_swiglu_quantized(s, gw, uw, q, ops::f32_rows(yb, 1, n_out));
    s.submit_and_wait();
    const std::vector<float> got = download(yb);
    for (int64_t o = 0; o < n_out; ++o) {
        const float gate = rg[size_t(o)], silu = gate / (1.0f + std::exp(-gate));
        const float tol = 4e-6f * (mg[size_t(o)] * std::fabs(ru[size_t(o)]) + mu[size_t(o)] * std::fabs(silu)) + 1e-6f;
        ASSERT_NEAR(got[size_t(o)], silu * ru[size_t(o)], tol) << "row " << o;
    }
}

TEST_F(MatvecQuantized, RefusesMismatchedInputs) {
    const TestWeight w = make_weight(ctx(), TensorType::Q4_0, 64, 3, 1), wk = make_weight(ctx(), TensorType::Q4_K, 256, 3, 2);
    const TestWeight wf = make_weight(ctx(), TensorType::F16, 64, 3, 3);
    gpu::Buffer qb(ctx(), 4096, gpu::Memory::Device), yb(ctx(), 64, gpu::Memory::Device);
    const ops::QuantizedActs q32 = ops::quantized_acts(qb, ops::ActRounding::Q8_32, 1, 64);
    const ops::QuantizedActs q256 = ops::quantized_acts(qb, ops::ActRounding::Q8_256, 1, 256);
    const ops::QuantizedActs two = ops::quantized_acts(qb, ops::ActRounding::Q8_32, 2, 64);
    gpu::Stream s(ctx());
    s.begin();
    const ops::TensorView y = ops::f32_rows(yb, 1, 3);
    EXPECT_THROW(ops::matvec_quantized(s, wk.gpu(), q32, y), ops::ShapeError);  // blocks of another type
    EXPECT_THROW(ops::matvec_quantized(s, w.gpu(), q256, y), ops::ShapeError);
    EXPECT_THROW(ops::matvec_quantized(s, w.gpu(), two, y), ops::ShapeError);   // two tokens
    EXPECT_THROW(ops::matvec_quantized(s, wf.gpu(), q32, y), ops::ShapeError);  // F16 reads floats
    EXPECT_THROW(ops::matvec_quantized(s, w.gpu(), q32, ops::f32_rows(qb, 1, 3)), ops::ShapeError);  // y over x
    s.submit_and_wait();
    EXPECT_FALSE(ops::matvec_reads_quantized(TensorType::F16));
    EXPECT_FALSE(ops::matvec_reads_quantized(TensorType::TQ1_0));
    EXPECT_TRUE(ops::matvec_reads_quantized(TensorType::Q8_0));
}

}  // namespace
}  // namespace vkllm
