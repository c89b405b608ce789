// Mamba-1's selective scan (ops::ssm_scan_mamba1) against the CPU reference (cpu/ref_ssm_mamba1.h)
// on odd shapes with llama.cpp's layouts (x and z halves of in_proj's row, dt_rank | B | C of
// x_proj's row), a prompt followed by decode steps equal to one pass, the whole mixer's conv
// (ssm_conv: Mamba-1's depthwise causal conv with bias and SiLU is Mamba-2's) followed by the scan,
// and the checks that refuse bad operands.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "cpu/ref_ssm.h"
#include "cpu/ref_ssm_mamba1.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/ssm_ops.h"
#include "test_support.h"

namespace vkllm {
namespace {

double rel_err(const std::vector<float>& got, const std::vector<float>& ref) {
    double m = 1.0;
    for (float r : ref) m = std::max(m, double(std::fabs(r)));
    return test::max_abs_diff(got, ref) / m;
}

struct Case {
    int64_t n_tokens, d_inner, d_state, dt_rank;
    bool d, gate;
};

// The operands of one layer's scan, on the host, in llama.cpp's layouts.
struct Operands {
    Case c;
    int64_t xz_stride, xdb_stride, dt_stride;
    std::vector<float> xz, xdb, dt, state, a, d;

    explicit Operands(const Case& cs) : c(cs) {
        xz_stride = 2 * c.d_inner + 1;  // x | z | one float of padding
        xdb_stride = c.dt_rank + 2 * c.d_state;
        dt_stride = c.d_inner + 2;
        const uint32_t seed = uint32_t(c.n_tokens * 7 + c.d_inner * 13 + c.d_state);
        xz = test::random_floats(size_t(3 + c.n_tokens * xz_stride), seed, -1.5f, 1.5f);
        xdb = test::random_floats(size_t(c.n_tokens * xdb_stride), seed + 1, -1.5f, 1.5f);
        dt = test::random_floats(size_t(c.n_tokens * dt_stride), seed + 2, -4.0f, 3.0f);
        // dt over softplus' threshold (20) and far below it on some tokens
        for (int64_t t = 0; t < c.n_tokens; ++t) {
            if (t % 5 == 1) dt[size_t(t * dt_stride)] = 25.0f;
            if (t % 5 == 2) dt[size_t(t * dt_stride + c.d_inner - 1)] = -30.0f;
        }
        state = test::random_floats(size_t(c.d_inner * c.d_state), seed + 3);
        // A = -exp(A_log), with Mamba's init A_log = log(1 .. d_state) around a random factor
        a = test::random_floats(size_t(c.d_inner * c.d_state), seed + 4, 0.5f, 1.5f);
        for (int64_t i = 0; i < c.d_inner; ++i)
            for (int64_t j = 0; j < c.d_state; ++j) a[size_t(i * c.d_state + j)] *= -float(j + 1);
        d = test::random_floats(size_t(c.d_inner), seed + 5);
    }

    // The reference over tokens [0, n_tokens) from the state held here (updated).
    std::vector<float> reference() {
        std::vector<float> y(size_t(c.n_tokens * c.d_inner));
        cpu::SsmScanMamba1Ref r;
        r.n_tokens = c.n_tokens, r.d_inner = c.d_inner, r.d_state = c.d_state, r.state = state.data();
        r.x = xz.data() + 3, r.x_stride = xz_stride, r.dt = dt.data(), r.dt_stride = dt_stride;
        r.b = xdb.data() + c.dt_rank, r.c = xdb.data() + c.dt_rank + c.d_state, r.bc_stride = xdb_stride;
        r.a = a.data(), r.d = c.d ? d.data() : nullptr;
        r.z = c.gate ? xz.data() + 3 + c.d_inner : nullptr, r.z_stride = xz_stride;
        r.y = y.data(), r.y_stride = c.d_inner;
        cpu::ssm_scan_mamba1(r);
        return y;
    }
};

class SsmMamba1 : public test::GpuTest {
protected:
    gpu::Buffer upload(const std::vector<float>& v) {
        gpu::Buffer b(ctx(), std::max<size_t>(v.size(), 1) * 4, gpu::Memory::Device);
        if (!v.empty()) b.upload(v.data(), v.size() * 4);
        return b;
    }
    std::vector<float> download(const gpu::Buffer& b) {
        std::vector<float> v(b.size() / 4);
        b.download(v.data(), b.size());
        return v;
    }

    // The scan's arguments for tokens [t0, t1) of `o`'s operands in the given buffers.
    ops::SsmScanMamba1Args args(const Operands& o, int64_t t0, int64_t t1, const gpu::Buffer& xz, const gpu::Buffer& xdb,
                                const gpu::Buffer& dt, const gpu::Buffer& st, const gpu::Buffer& a, const gpu::Buffer& d,
                                const gpu::Buffer& y) {
        const Case& c = o.c;
        const int64_t n = t1 - t0;
        ops::SsmScanMamba1Args r;
        r.state = ops::f32_rows(st, c.d_inner, c.d_state);
        r.x = ops::f32_rows(xz, n, c.d_inner, uint64_t(3 + t0 * o.xz_stride), o.xz_stride);
        if (c.gate) r.z = ops::f32_rows(xz, n, c.d_inner, uint64_t(3 + t0 * o.xz_stride + c.d_inner), o.xz_stride);
        r.dt = ops::f32_rows(dt, n, c.d_inner, uint64_t(t0 * o.dt_stride), o.dt_stride);
        r.b = ops::f32_rows(xdb, n, c.d_state, uint64_t(t0 * o.xdb_stride + c.dt_rank), o.xdb_stride);
        r.c = ops::f32_rows(xdb, n, c.d_state, uint64_t(t0 * o.xdb_stride + c.dt_rank + c.d_state), o.xdb_stride);
        r.a = ops::f32_rows(a, c.d_inner, c.d_state);
        if (c.d) r.d = ops::f32_rows(d, 1, c.d_inner);
        r.y = ops::f32_rows(y, n, c.d_inner, uint64_t(t0 * c.d_inner));
        return r;
    }

    // Runs the scan over the tokens in pieces [0, splits[0]), [splits[0], splits[1]), ... and
    // compares y and the final state with the reference over all tokens in one pass.
    void check(const Case& c, const std::vector<int64_t>& splits) {
        Operands o(c);
        gpu::Buffer xz = upload(o.xz), xdb = upload(o.xdb), dt = upload(o.dt), st = upload(o.state);
        gpu::Buffer a = upload(o.a), d = upload(o.d);
        gpu::Buffer y(ctx(), size_t(std::max<int64_t>(1, c.n_tokens * c.d_inner)) * 4, gpu::Memory::Device);
        const auto ref_y = o.reference();
        gpu::Stream s(ctx());
        s.begin();
        int64_t t0 = 0;
        for (int64_t t1 : splits) {
            ops::ssm_scan_mamba1(s, args(o, t0, t1, xz, xdb, dt, st, a, d, y));
            s.barrier("the next tokens read the state");
            t0 = t1;
        }
        s.submit_and_wait();
        const std::string what = std::to_string(c.n_tokens) + " tokens, d_inner " + std::to_string(c.d_inner) +
                                 ", d_state " + std::to_string(c.d_state) + ", " + std::to_string(splits.size()) +
                                 " calls";
        auto got_y = download(y);
        got_y.resize(ref_y.size());
        EXPECT_LT(rel_err(got_y, ref_y), 2e-5) << what;
        EXPECT_LT(rel_err(download(st), o.state), 2e-5) << what;
    }
};

TEST_F(SsmMamba1, ScanMatchesReferenceForOddShapes) {
    const Case cases[] = {{1, 5, 16, 1, true, true},   {7, 37, 16, 3, true, true},  {9, 130, 5, 2, false, true},
                          {4, 65, 1, 1, true, false},  {13, 33, 33, 4, false, false}, {3, 3, 130, 2, true, true}};
    for (const Case& c : cases) check(c, {c.n_tokens});
}

// A prompt, then one-token decode steps carrying the state: the same as one pass.
TEST_F(SsmMamba1, PromptThenDecodeStepsEqualOnePass) {
    check({12, 70, 16, 5, true, true}, {7, 8, 9, 10, 11, 12});
    check({6, 19, 16, 2, true, true}, {1, 2, 3, 4, 5, 6});
}

// The mixer's recurrence as llama.cpp's build_mamba_layer runs it: the x half of in_proj's row
// through ssm_conv (bias, SiLU) with its state, then the scan gated by the z half; a prompt
// and a decode step, against the CPU reference of both.
TEST_F(SsmMamba1, ConvThenScanMatchesReference) {
    const Case c{9, 41, 16, 3, true, true};
    const int64_t d_conv = 4;
    Operands o(c);
    auto w = test::random_floats(size_t(c.d_inner * d_conv), 71);
    auto bias = test::random_floats(size_t(c.d_inner), 72);
    auto conv_st = test::random_floats(size_t(c.d_inner * (d_conv - 1)), 73);

    // reference: conv into a packed x, then the scan reading it
    std::vector<float> ref_conv_st = conv_st, xc(size_t(c.n_tokens * c.d_inner));
    cpu::ssm_conv(o.xz.data() + 3, o.xz_stride, ref_conv_st.data(), w.data(), bias.data(), xc.data(), c.d_inner,
                  c.n_tokens, c.d_inner, d_conv, true);
    std::vector<float> ref_st = o.state, ref_y(xc.size());
    cpu::SsmScanMamba1Ref r;
    r.n_tokens = c.n_tokens, r.d_inner = c.d_inner, r.d_state = c.d_state, r.state = ref_st.data();
    r.x = xc.data(), r.x_stride = c.d_inner, r.dt = o.dt.data(), r.dt_stride = o.dt_stride;
    r.b = o.xdb.data() + c.dt_rank, r.c = o.xdb.data() + c.dt_rank + c.d_state, r.bc_stride = o.xdb_stride;
    r.a = o.a.data(), r.d = o.d.data(), r.z = o.xz.data() + 3 + c.d_inner, r.z_stride = o.xz_stride;
    r.y = ref_y.data(), r.y_stride = c.d_inner;
    cpu::ssm_scan_mamba1(r);

    gpu::Buffer xz = upload(o.xz), xdb = upload(o.xdb), dt = upload(o.dt), st = upload(o.state);
    gpu::Buffer a = upload(o.a), d = upload(o.d), wb = upload(w), bb = upload(bias), cs = upload(conv_st);
    gpu::Buffer xcb(ctx(), xc.size() * 4, gpu::Memory::Device), y(ctx(), ref_y.size() * 4, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    for (auto [t0, t1] : {std::pair<int64_t, int64_t>{0, c.n_tokens - 1}, {c.n_tokens - 1, c.n_tokens}}) {
        ops::SsmConvArgs ca;
        ca.x = ops::f32_rows(xz, t1 - t0, c.d_inner, uint64_t(3 + t0 * o.xz_stride), o.xz_stride);
        ca.state = ops::f32_rows(cs, c.d_inner, d_conv - 1);
        ca.w = ops::f32_rows(wb, c.d_inner, d_conv);
        ca.bias = ops::f32_vector(bb, c.d_inner);
        ca.y = ops::f32_rows(xcb, t1 - t0, c.d_inner, uint64_t(t0 * c.d_inner));
        ops::ssm_conv(s, ca);
        s.barrier("the scan reads the conv's output");
        ops::SsmScanMamba1Args sa = args(o, t0, t1, xz, xdb, dt, st, a, d, y);
        sa.x = ops::f32_rows(xcb, t1 - t0, c.d_inner, uint64_t(t0 * c.d_inner));
        ops::ssm_scan_mamba1(s, sa);
        s.barrier("the next step reads the states");
    }
    s.submit_and_wait();
    EXPECT_LT(rel_err(download(y), ref_y), 2e-5);
    EXPECT_LT(rel_err(download(st), ref_st), 2e-5);
    EXPECT_EQ(download(cs), ref_conv_st);
}

TEST_F(SsmMamba1, RefusesBadOperands) {
    const Case c{3, 8, 4, 2, true, true};
    Operands o(c);
    gpu::Buffer xz = upload(o.xz), xdb = upload(o.xdb), dt = upload(o.dt), st = upload(o.state);
    gpu::Buffer a = upload(o.a), d = upload(o.d), other = upload(o.xdb);
    gpu::Buffer y(ctx(), size_t(c.n_tokens * c.d_inner) * 4, gpu::Memory::Device);
    auto run = [&](const ops::SsmScanMamba1Args& r) {
        gpu::Stream s(ctx());
        s.begin();
        ops::ssm_scan_mamba1(s, r);
        s.submit_and_wait();
    };
    const ops::SsmScanMamba1Args good = args(o, 0, c.n_tokens, xz, xdb, dt, st, a, d, y);
    run(good);
    auto bad = good;
    bad.c.buffer = &other;  // B and C in two buffers
    EXPECT_THROW(run(bad), ops::ShapeError);
    bad = good;
    bad.dt.rows = c.n_tokens - 1;  // dt for fewer tokens than x
    EXPECT_THROW(run(bad), ops::ShapeError);
    bad = good;
    bad.a.cols = c.d_state + 1;  // A's rows not the state's
    EXPECT_THROW(run(bad), ops::ShapeError);
    bad = good;
    bad.y = ops::f32_rows(st, c.n_tokens, c.d_inner);  // y over the state
    EXPECT_THROW(run(bad), ops::ShapeError);
    bad = good;
    bad.y = ops::f32_rows(xdb, c.n_tokens, c.d_inner, 0, o.xdb_stride);  // y over B and C
    EXPECT_THROW(run(bad), ops::ShapeError);
    bad = good;
    bad.y = good.z;  // y over the gate: each channel reads z before it writes y
    run(bad);
    gpu::Buffer big(ctx(), size_t(c.d_inner * 300) * 4, gpu::Memory::Device);
    bad = good;
    bad.state = ops::f32_rows(big, c.d_inner, 300);  // d_state over the limit
    bad.a = ops::f32_rows(big, c.d_inner, 300);
    EXPECT_THROW(run(bad), ops::ShapeError);
}

}  // namespace
}  // namespace vkllm
