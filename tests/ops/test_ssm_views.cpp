// The state-space ops (ssm_conv, ssm_scan, ssm_group_rms_norm) refuse bad tensor views with a
// ShapeError naming the op and the operand: wrong shapes, a wrong element type, operands that do
// not share the binding the shader reads them through, and writes over what they read. Each
// case starts from a good set of views that runs, and changes one thing.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/ssm_ops.h"

namespace vkllm {
namespace {

class SsmViews : public test::GpuTest {
protected:
    gpu::Buffer zeros(int64_t n) {
        gpu::Buffer b(ctx(), size_t(n) * 4, gpu::Memory::Device);
        const std::vector<float> v(size_t(n), 0.0f);
        b.upload(v.data(), v.size() * 4);
        return b;
    }
    void run(const std::function<void(gpu::Stream&)>& record) {
        gpu::Stream s(ctx());
        s.begin();
        record(s);
        s.submit_and_wait();
    }
    // Expects a ShapeError whose message names `op` and contains `words`.
    void expect_refused(const std::function<void(gpu::Stream&)>& record, const std::string& op,
                        const std::string& words) {
        try {
            run(record);
            ADD_FAILURE() << "accepted; expected " << op << ": ..." << words;
        } catch (const ops::ShapeError& e) {
            const std::string what = e.what();
            EXPECT_EQ(what.rfind(op + ": ", 0), 0u) << what;
            EXPECT_NE(what.find(words), std::string::npos) << what << " (expected '" << words << "')";
        }
    }
};

TEST_F(SsmViews, ConvRefusesBadViews) {
    const int64_t T = 3, C = 6, K = 4, stride = 3 * C;  // x inside rows of in_gate | out_gate | x
    gpu::Buffer rows = zeros(T * stride), st = zeros(C * (K - 1)), w = zeros(C * K), bias = zeros(C),
                y = zeros(T * C);
    ops::SsmConvArgs good;
    good.x = ops::f32_rows(rows, T, C, uint64_t(2 * C), stride);
    good.state = ops::f32_rows(st, C, K - 1);
    good.w = ops::f32_rows(w, C, K);
    good.bias = ops::f32_vector(bias, C);
    good.y = ops::f32_rows(y, T, C);
    auto conv = [&](const ops::SsmConvArgs& a) { return [a](gpu::Stream& s) { ops::ssm_conv(s, a); }; };
    run(conv(good));

    ops::SsmConvArgs gated = good;
    gated.in_gate = ops::f32_rows(rows, T, C, 0, stride);
    gated.out_gate = ops::f32_rows(rows, T, C, uint64_t(C), stride);
    gated.bias = {};
    gated.silu = false;
    run(conv(gated));
    ops::SsmConvArgs bad = gated;
    bad.y = gated.out_gate;  // y over a gate's very rows: allowed
    run(conv(bad));

    bad = good;
    gpu::Buffer wide = zeros(C * (ops::kSsmMaxConv + 1));
    bad.w = ops::f32_rows(wide, C, ops::kSsmMaxConv + 1);
    expect_refused(conv(bad), "ssm_conv", "d_conv");
    bad = good;
    bad.state = ops::f32_rows(st, C, K - 2);
    expect_refused(conv(bad), "ssm_conv", "the state is [6, 2], expected [6, 3]");
    bad = good;
    bad.y = ops::f32_rows(y, T - 1, C);
    expect_refused(conv(bad), "ssm_conv", "y is [2, 6], expected [3, 6]");
    bad = good;
    bad.bias = ops::f32_vector(bias, C - 1);
    expect_refused(conv(bad), "ssm_conv", "the bias holds 5 values");
    bad = gated;
    bad.in_gate.cols = C + 1;
    expect_refused(conv(bad), "ssm_conv", "the input gate is [3, 7]");
    bad = good;
    bad.x.type = gguf::TensorType::I32;
    expect_refused(conv(bad), "ssm_conv", "x must be F32");
    bad = good;
    bad.y = ops::f32_rows(st, T, C);  // y over the state
    expect_refused(conv(bad), "ssm_conv", "y overlaps the state");
    bad = good;
    bad.y = ops::f32_rows(rows, T, C, uint64_t(2 * C - 1), stride);  // y one column left of x
    expect_refused(conv(bad), "ssm_conv", "y overlaps x without being x itself");
    bad = good;
    bad.state = ops::f32_rows(rows, C, K - 1);  // the state over x's rows
    expect_refused(conv(bad), "ssm_conv", "the state overlaps x");
}

TEST_F(SsmViews, ScanRefusesBadViews) {
    const int64_t T = 2, H = 4, P = 3, N = 8, G = 2, D = H * P, GS = G * N;
    const int64_t xbc_stride = D + 2 * GS, zdt_stride = D + xbc_stride + H;  // z | xBC | dt
    gpu::Buffer xbc = zeros(T * xbc_stride), zdt = zeros(T * zdt_stride), st = zeros(D * N), heads = zeros(3 * H),
                y = zeros(T * D);
    ops::SsmScanArgs good;
    good.state = ops::f32_rows(st, D, N);
    good.x = ops::f32_rows(xbc, T, D, 0, xbc_stride);
    good.b = ops::f32_rows(xbc, T, GS, uint64_t(D), xbc_stride);
    good.c = ops::f32_rows(xbc, T, GS, uint64_t(D + GS), xbc_stride);
    good.z = ops::f32_rows(zdt, T, D, 0, zdt_stride);
    good.dt = ops::f32_rows(zdt, T, H, uint64_t(D + xbc_stride), zdt_stride);
    good.dt_bias = ops::f32_vector(heads, H);
    good.a = ops::f32_vector(heads, H, uint64_t(H));
    good.d = ops::f32_vector(heads, H, uint64_t(2 * H));
    good.y = ops::f32_rows(y, T, D);
    auto scan = [&](const ops::SsmScanArgs& a) { return [a](gpu::Stream& s) { ops::ssm_scan(s, a); }; };
    run(scan(good));
    ops::SsmScanArgs bad = good;
    bad.z = {}, bad.dt_bias = {}, bad.d = {};  // the optional operands left out
    run(scan(bad));

    bad = good;
    bad.dt = ops::f32_rows(zdt, T, 5, uint64_t(D + xbc_stride - 1), zdt_stride);
    expect_refused(scan(bad), "ssm_scan", "not a multiple of dt's 5 heads");
    bad = good;
    bad.b = ops::f32_rows(xbc, T, GS + 1, uint64_t(D), xbc_stride);
    expect_refused(scan(bad), "ssm_scan", "not groups of the state's 8");
    bad = good;
    bad.b = ops::f32_rows(xbc, T, 3 * N, uint64_t(D), xbc_stride);
    bad.c = ops::f32_rows(xbc, T, 3 * N, uint64_t(D + GS), xbc_stride);
    bad.state = ops::f32_rows(st, D, N);
    expect_refused(scan(bad), "ssm_scan", "n_head 4 is not a multiple of n_group 3");
    bad = good;
    bad.c = ops::f32_rows(xbc, T, GS - N, uint64_t(D + GS), xbc_stride);
    expect_refused(scan(bad), "ssm_scan", "C is [2, 8], expected [2, 16]");
    bad = good;
    bad.z = ops::f32_rows(zdt, T - 1, D, 0, zdt_stride);
    expect_refused(scan(bad), "ssm_scan", "z is [1, 12], expected [2, 12]");
    bad = good;
    bad.state = ops::f32_rows(st, D - 1, N);
    expect_refused(scan(bad), "ssm_scan", "the state is [11, 8], expected [12, 8]");
    bad = good;
    bad.a = ops::f32_vector(heads, H - 1, uint64_t(H));
    expect_refused(scan(bad), "ssm_scan", "A holds 3 values, expected 4");
    bad = good;
    bad.d.type = gguf::TensorType::I32;
    expect_refused(scan(bad), "ssm_scan", "D must be F32");
    bad = good;
    bad.c.buffer = &zdt;
    expect_refused(scan(bad), "ssm_scan", "B and C must be views of x's buffer");
    bad = good;
    bad.x = ops::f32_rows(xbc, T, D, uint64_t(GS), xbc_stride);  // B before x's first value
    bad.b = ops::f32_rows(xbc, T, GS, 0, xbc_stride);
    expect_refused(scan(bad), "ssm_scan", "B and C must start at or after x's first value");
    bad = good;
    bad.z = ops::f32_rows(xbc, T, D, 0, xbc_stride);
    expect_refused(scan(bad), "ssm_scan", "z must be a view of dt's buffer");
    bad = good;
    bad.y = ops::f32_rows(xbc, T, D, 0, xbc_stride);  // y over x
    expect_refused(scan(bad), "ssm_scan", "y overlaps x");
    bad = good;
    bad.y = ops::f32_rows(st, T, D);  // y over the state
    expect_refused(scan(bad), "ssm_scan", "y overlaps the state");
    bad = good;
    bad.state = ops::f32_rows(zdt, D, N);  // the state over z and dt
    expect_refused(scan(bad), "ssm_scan", "the state overlaps dt");
}

TEST_F(SsmViews, GroupRmsNormRefusesBadViews) {
    const int64_t rows = 3, n = 5, groups = 2;
    gpu::Buffer x = zeros(rows * n * groups + 1), w = zeros(n * groups), y = zeros(rows * n * groups);
    const ops::TensorView xv = ops::f32_rows(x, rows, n * groups), yv = ops::f32_rows(y, rows, n * groups);
    auto norm = [&](const ops::TensorView& a, const ops::TensorView& b, int64_t g) {
        return [a, b, g, &w](gpu::Stream& s) { ops::ssm_group_rms_norm(s, a, &w, b, g, 1e-5f); };
    };
    run(norm(xv, yv, groups));
    run(norm(xv, xv, groups));  // in place
    expect_refused(norm(xv, yv, 3), "ssm_group_rms_norm", "x's 10 columns are not 3 groups");
    expect_refused(norm(xv, ops::f32_rows(y, rows - 1, n * groups), groups), "ssm_group_rms_norm",
                   "x and y must have one shape");
    expect_refused(norm(ops::f32_rows(x, rows, n, 0, n * groups), ops::f32_rows(y, rows, n, 0, n * groups), 1),
                   "ssm_group_rms_norm", "x must have packed rows");
    expect_refused(norm(xv, ops::f32_rows(x, rows, n * groups, 1), groups), "ssm_group_rms_norm",
                   "y overlaps x without being x itself");
    ops::TensorView wrong = yv;
    wrong.type = gguf::TensorType::I32;
    expect_refused(norm(xv, wrong, groups), "ssm_group_rms_norm", "y must be F32");
}

}  // namespace
}  // namespace vkllm
