// Reference ops: matmul / get_rows / argmax over quantized weights, norms, softmax, activations.
// Expected values are computed by hand (or from closed forms noted beside them).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu/ref_ops.h"
#include "gguf/quant.h"
#include "test_support.h"

using namespace vkllm;
using cpu::WeightView;
using gguf::TensorType;

namespace {

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

// One Q8_0 block: fp16 scale then 32 int8 quants (ggml block_q8_0).
void append_q8_0_block(std::vector<uint8_t>& out, uint16_t d_fp16, const int8_t (&qs)[32]) {
    out.push_back(uint8_t(d_fp16 & 0xff));
    out.push_back(uint8_t(d_fp16 >> 8));
    for (int8_t q : qs) out.push_back(uint8_t(q));
}

}  // namespace

// ---------------------------------------------------------------------------------- matmul

TEST(Matmul, F32HandComputedWithAndWithoutBias) {
    // W {n_in=3, n_out=2}: rows [1 2 3], [4 5 6]
    auto w = f32_bytes({1, 2, 3, 4, 5, 6});
    WeightView view{TensorType::F32, w.data(), 3, 2};
    std::vector<float> x = {1, 0, -1, 0.5f, 1, 2};  // [2, 3]
    std::vector<float> y(4);                        // [2, 2]
    cpu::matmul(view, x.data(), y.data(), 2);
    EXPECT_FLOAT_EQ(y[0], -2.0f);
    EXPECT_FLOAT_EQ(y[1], -2.0f);
    EXPECT_FLOAT_EQ(y[2], 0.5f + 2 + 6);
    EXPECT_FLOAT_EQ(y[3], 2 + 5 + 12);
    std::vector<float> bias = {0.5f, -1.0f};
    cpu::matmul(view, x.data(), y.data(), 2, bias.data());
    EXPECT_FLOAT_EQ(y[0], -1.5f);
    EXPECT_FLOAT_EQ(y[1], -3.0f);
    EXPECT_FLOAT_EQ(y[3], 18.0f);
}

TEST(Matmul, Q8_0HandBuiltBlocks) {
    // Row 0: d = 0.5 (fp16 0x3800), q_i = i - 16  -> w_i = 0.5 (i - 16)
    // Row 1: d = 2   (fp16 0x4000), q_i = 1       -> w_i = 2
    int8_t ramp[32], ones[32];
    for (int i = 0; i < 32; ++i) { ramp[i] = int8_t(i - 16); ones[i] = 1; }
    std::vector<uint8_t> w;
    append_q8_0_block(w, 0x3800, ramp);
    append_q8_0_block(w, 0x4000, ones);
    WeightView view{TensorType::Q8_0, w.data(), 32, 2};
    std::vector<float> x(32, 1.0f);
    x[31] = 3.0f;  // adds 2 * w_31
    std::vector<float> y(2);
    cpu::matmul(view, x.data(), y.data(), 1);
    // sum_i 0.5 (i - 16) = 0.5 * (496 - 512) = -8; plus 2 * 0.5 * 15 = 15
    EXPECT_FLOAT_EQ(y[0], -8.0f + 15.0f);
    EXPECT_FLOAT_EQ(y[1], 2.0f * 31 + 2.0f * 3);
}

TEST(Matmul, Q4_0HandBuiltBlockNibbleOrder) {
    // block_q4_0: fp16 d = 1, 16 bytes; element j = (qs[j] & 15) - 8, element j+16 = (qs[j] >> 4) - 8.
    std::vector<uint8_t> w = {0x00, 0x3c};
    for (int j = 0; j < 16; ++j) w.push_back(uint8_t(j | ((15 - j) << 4)));
    WeightView view{TensorType::Q4_0, w.data(), 32, 1};
    for (int e = 0; e < 32; ++e) {  // read element e with a one-hot x
        std::vector<float> x(32, 0.0f);
        x[e] = 1.0f;
        float y = 0;
        cpu::matmul(view, x.data(), &y, 1);
        const float expected = e < 16 ? float(e - 8) : float(15 - (e - 16) - 8);
        EXPECT_FLOAT_EQ(y, expected) << "element " << e;
    }
}

TEST(Matmul, QuantizedTypesEqualDequantizeThenFloatMatmul) {
    const TensorType types[] = {TensorType::F16,  TensorType::BF16, TensorType::Q4_0, TensorType::Q4_1,
                                TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0, TensorType::Q2_K,
                                TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K,
                                TensorType::MXFP4};
    const int64_t n_in = 512, n_out = 7, n_tokens = 3;
    const auto w_f32 = test::random_floats(n_in * n_out, 11);
    const auto x = test::random_floats(n_in * n_tokens, 12);  // [n_tokens, n_in]
    for (TensorType t : types) {
        SCOPED_TRACE(gguf::type_traits(t)->name);
        const auto w = gguf::quantize(t, w_f32.data(), w_f32.size());
        const auto w_deq = gguf::dequantize(t, w.data(), w_f32.size());  // [n_out, n_in]
        std::vector<float> ref(n_tokens * n_out);
        for (int64_t tk = 0; tk < n_tokens; ++tk)
            for (int64_t o = 0; o < n_out; ++o) {
                double acc = 0;
                for (int64_t i = 0; i < n_in; ++i) acc += double(w_deq[o * n_in + i]) * x[tk * n_in + i];
                ref[tk * n_out + o] = float(acc);
            }
        std::vector<float> y(n_tokens * n_out);
        cpu::matmul(WeightView{t, w.data(), n_in, n_out}, x.data(), y.data(), n_tokens);
        EXPECT_LT(test::max_abs_diff(y, ref), 1e-4);
        // The quantized product stays near the float one (loose: Q2_K is coarse).
        std::vector<float> y_f32(n_tokens * n_out);
        cpu::matmul(WeightView{TensorType::F32, reinterpret_cast<const uint8_t*>(w_f32.data()), n_in, n_out},
                    x.data(), y_f32.data(), n_tokens);
        EXPECT_LT(test::nmse(y, y_f32), 0.15);
    }
}

TEST(Matmul, RejectsRowLengthNotAMultipleOfTheBlock) {
    std::vector<uint8_t> w(34 * 2);
    std::vector<float> x(48), y(1);
    EXPECT_THROW(cpu::matmul(WeightView{TensorType::Q8_0, w.data(), 48, 1}, x.data(), y.data(), 1), cpu::ShapeError);
    EXPECT_THROW(cpu::matmul(WeightView{TensorType::Q8_0, nullptr, 32, 1}, x.data(), y.data(), 1), cpu::ShapeError);
}

// ---------------------------------------------------------------------------- get_rows, argmax

TEST(GetRows, LooksUpAndDequantizesRows) {
    auto table = f32_bytes({0, 1, 10, 11, 20, 21});  // {n_in=2, n_out=3}
    WeightView view{TensorType::F32, table.data(), 2, 3};
    const int32_t ids[] = {2, 0, 2};
    std::vector<float> out(6);
    cpu::get_rows(view, ids, 3, out.data());
    EXPECT_EQ(out, (std::vector<float>{20, 21, 0, 1, 20, 21}));

    int8_t q[32];
    for (int i = 0; i < 32; ++i) q[i] = int8_t(i);
    std::vector<uint8_t> qt;
    append_q8_0_block(qt, 0x3c00, q);   // d = 1
    append_q8_0_block(qt, 0xbc00, q);   // d = -1
    std::vector<float> row(32);
    const int32_t one = 1;
    cpu::get_rows(WeightView{TensorType::Q8_0, qt.data(), 32, 2}, &one, 1, row.data());
    for (int i = 0; i < 32; ++i) EXPECT_EQ(row[i], -float(i));
}

TEST(GetRows, RejectsOutOfRangeIds) {
    auto table = f32_bytes({0, 1, 10, 11});
    WeightView view{TensorType::F32, table.data(), 2, 2};
    std::vector<float> out(2);
    const int32_t bad[] = {2, -1};
    EXPECT_THROW(cpu::get_rows(view, &bad[0], 1, out.data()), cpu::ShapeError);
    EXPECT_THROW(cpu::get_rows(view, &bad[1], 1, out.data()), cpu::ShapeError);
}

TEST(Argmax, LowestIndexOnTiesAndSkipsNaN) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> a = {-3, 5, 2, 5, 1};
    EXPECT_EQ(cpu::argmax(a.data(), 5), 1);
    std::vector<float> b = {nan, -7, -2, nan, -2};
    EXPECT_EQ(cpu::argmax(b.data(), 5), 2);
    std::vector<float> c = {-1, -1, 4};
    EXPECT_EQ(cpu::argmax(c.data(), 3), 2);
    EXPECT_THROW(cpu::argmax(c.data(), 0), cpu::ShapeError);
}

// ------------------------------------------------------------------------------------ norms

TEST(RmsNorm, HandComputedAndUnitRms) {
    std::vector<float> x = {1, 2, 3, 4}, y(4);
    cpu::rms_norm(x.data(), nullptr, y.data(), 1, 4, 0.0f);
    const float rms = std::sqrt(7.5f);  // mean of squares: 30 / 4
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i], x[i] / rms, 1e-6);
    std::vector<float> w = {1, 0.5f, 2, -1};
    cpu::rms_norm(x.data(), w.data(), y.data(), 1, 4, 0.0f);
    EXPECT_NEAR(y[1], 1.0f / rms, 1e-6);
    EXPECT_NEAR(y[3], -4.0f / rms, 1e-6);

    const int64_t n_tokens = 5, n = 333;
    auto r = test::random_floats(n_tokens * n, 3, -4.0f, 9.0f);
    std::vector<float> out(r.size());
    cpu::rms_norm(r.data(), nullptr, out.data(), n_tokens, n, 1e-6f);
    for (int64_t t = 0; t < n_tokens; ++t) {
        double ss = 0;
        for (int64_t i = 0; i < n; ++i) ss += double(out[t * n + i]) * out[t * n + i];
        EXPECT_NEAR(std::sqrt(ss / n), 1.0, 1e-5);
    }
    // eps matters for a zero row: output stays 0, not NaN.
    std::vector<float> z(8, 0.0f), zo(8, 1.0f);
    cpu::rms_norm(z.data(), nullptr, zo.data(), 1, 8, 1e-5f);
    for (float v : zo) EXPECT_EQ(v, 0.0f);
}

TEST(LayerNorm, HandComputed) {
    std::vector<float> x = {1, 2, 3, 4, 10, 10, 10, 10}, y(8);
    cpu::layer_norm(x.data(), nullptr, nullptr, y.data(), 2, 4, 0.0f);
    // mean 2.5, variance 1.25
    const float s = std::sqrt(1.25f);
    EXPECT_NEAR(y[0], -1.5f / s, 1e-6);
    EXPECT_NEAR(y[3], 1.5f / s, 1e-6);
    std::vector<float> w = {2, 2, 2, 2}, b = {1, 0, 0, -1};
    cpu::layer_norm(x.data(), w.data(), b.data(), y.data(), 2, 4, 1e-5f);
    EXPECT_NEAR(y[0], 2 * (-1.5f / s) + 1, 1e-4);
    EXPECT_NEAR(y[2], 2 * (0.5f / s), 1e-4);
    EXPECT_FLOAT_EQ(y[4], 1.0f);  // constant row: (x - mean) = 0, only the bias is left
    EXPECT_FLOAT_EQ(y[7], -1.0f);
}

// ---------------------------------------------------------------------------------- softmax

TEST(Softmax, HandComputedScaleCapAndMaskedEntries) {
    std::vector<float> x = {1, 2, 3}, y(3);
    cpu::softmax(x.data(), y.data(), 1, 3);
    EXPECT_NEAR(y[0], 0.09003057f, 1e-7);
    EXPECT_NEAR(y[1], 0.24472847f, 1e-7);
    EXPECT_NEAR(y[2], 0.66524096f, 1e-7);
    cpu::softmax(x.data(), y.data(), 1, 3, 2.0f);  // = softmax(2, 4, 6)
    EXPECT_NEAR(y[0], 0.01587624f, 1e-7);
    EXPECT_NEAR(y[2], 0.86681333f, 1e-7);

    std::vector<float> c = {0, 100}, cy(2);  // capped at 1: logits (0, tanh 100 = 1)
    cpu::softmax(c.data(), cy.data(), 1, 2, 1.0f, 1.0f);
    EXPECT_NEAR(cy[0], 0.26894142f, 1e-6);
    EXPECT_NEAR(cy[1], 0.73105858f, 1e-6);

    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> m = {-inf, 0, -inf, 0, -inf, -inf}, my(6, 7.0f);  // [2, 3]
    cpu::softmax(m.data(), my.data(), 2, 3);
    EXPECT_EQ(my[0], 0.0f);
    EXPECT_FLOAT_EQ(my[1], 1.0f);
    EXPECT_FLOAT_EQ(my[3], 1.0f);
    EXPECT_EQ(my[4], 0.0f);

    auto r = test::random_floats(4 * 97, 5, -30.0f, 30.0f);
    cpu::softmax(r.data(), r.data(), 4, 97);  // in place
    for (int row = 0; row < 4; ++row) {
        double s = 0;
        for (int i = 0; i < 97; ++i) {
            EXPECT_GE(r[row * 97 + i], 0.0f);
            s += r[row * 97 + i];
        }
        EXPECT_NEAR(s, 1.0, 1e-6);
    }
}

TEST(Softcap, Bounded) {
    std::vector<float> x = {0, 1, -1000, 1000}, y(4);
    cpu::softcap(x.data(), y.data(), 4, 30.0f);
    EXPECT_EQ(y[0], 0.0f);
    EXPECT_NEAR(y[1], 30.0 * std::tanh(1.0 / 30.0), 1e-6);
    EXPECT_FLOAT_EQ(y[2], -30.0f);
    EXPECT_FLOAT_EQ(y[3], 30.0f);
    EXPECT_THROW(cpu::softcap(x.data(), y.data(), 4, 0.0f), cpu::ShapeError);
}

// ------------------------------------------------------------------------------ activations

TEST(Activations, HandComputedValues) {
    std::vector<float> x = {1, -1, 0, 3}, y(4);
    cpu::silu(x.data(), y.data(), 4);
    EXPECT_NEAR(y[0], 0.73105858f, 1e-6);   // 1 / (1 + e^-1)
    EXPECT_NEAR(y[1], -0.26894142f, 1e-6);
    EXPECT_EQ(y[2], 0.0f);
    cpu::gelu_erf(x.data(), y.data(), 4);
    EXPECT_NEAR(y[0], 0.84134475f, 1e-6);   // Phi(1)
    EXPECT_NEAR(y[1], -0.15865525f, 1e-6);
    EXPECT_NEAR(y[3], 3 * 0.99865010f, 1e-5);
    cpu::gelu(x.data(), y.data(), 4);
    EXPECT_NEAR(y[0], 0.84119199f, 1e-6);   // 0.5 (1 + tanh(0.7978846 * 1.044715))
    EXPECT_NEAR(y[1], -0.15880801f, 1e-6);
    cpu::sigmoid(x.data(), y.data(), 4);
    EXPECT_NEAR(y[2], 0.5f, 1e-7);
    EXPECT_NEAR(y[3], 0.95257413f, 1e-6);

    std::vector<float> a = {1, 2}, b = {10, -3};
    cpu::add(a.data(), b.data(), y.data(), 2);
    EXPECT_EQ(y[0], 11.0f);
    EXPECT_EQ(y[1], -1.0f);
    cpu::mul(a.data(), b.data(), y.data(), 2);
    EXPECT_EQ(y[1], -6.0f);
    cpu::scale(b.data(), -0.5f, y.data(), 2);
    EXPECT_EQ(y[0], -5.0f);
    EXPECT_EQ(y[1], 1.5f);
}

TEST(Activations, GatedUnits) {
    std::vector<float> gate = {1, -1, 2, 0}, up = {2, 3, -1, 5}, y(4);  // [2, 2]
    cpu::swiglu(gate.data(), up.data(), y.data(), 2, 2);
    EXPECT_NEAR(y[0], 2 * 0.73105858f, 1e-6);
    EXPECT_NEAR(y[1], 3 * -0.26894142f, 1e-6);
    EXPECT_NEAR(y[2], -2 * 0.88079708f, 1e-6);
    EXPECT_EQ(y[3], 0.0f);
    cpu::geglu(gate.data(), up.data(), y.data(), 2, 2);
    EXPECT_NEAR(y[0], 2 * 0.84119199f, 1e-6);
    EXPECT_NEAR(y[1], 3 * -0.15880801f, 1e-6);

    // gpt-oss: gate clamped above at 7, up clamped to [-7, 7], then + 1.
    std::vector<float> g2 = {10, 1}, u2 = {-10, 0}, y2(2);
    cpu::swiglu_oai(g2.data(), u2.data(), y2.data(), 1, 2, 1.702f, 7.0f);
    EXPECT_NEAR(y2[0], 7 * (1 / (1 + std::exp(-1.702 * 7))) * -6, 1e-4);  // ~ -41.9997
    EXPECT_NEAR(y2[1], 1 / (1 + std::exp(-1.702)), 1e-6);                 // 0.84582
}
