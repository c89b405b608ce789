// RWKV-7's kernels (ops/rwkv_ops.h) against the CPU reference (cpu/ref_rwkv.h): head size 64 with
// an odd head count and a small odd head size, operands as columns of wider rows at offsets, a
// prompt followed by decode steps equal to one pass (the wkv state and the token shift carried),
// the in-place steps, and bad operands refused.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cpu/ref_rwkv.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "op_test_data.h"
#include "ops/rwkv_ops.h"
#include "rwkv_test_data.h"
#include "test_support.h"

namespace vkllm {
namespace {

using test::describe;
using test::Heads;
using test::rel_err;

class Rwkv : public test::GpuTest {
protected:
    gpu::Buffer upload(const std::vector<float>& v) { return test::upload(ctx(), v); }
    template <class F> void run(F&& record) {
        gpu::Stream s(ctx());
        s.begin();
        record(s);
        s.submit_and_wait();
    }
};

TEST_F(Rwkv, Wkv7MatchesReferenceAndStepsEqualOnePass) {
    for (const Heads h : {Heads{3, 64}, Heads{5, 7}}) {
        const int64_t n = 37;
        const test::WkvOperands in(h, n);
        std::vector<float> ref_state = in.state, ref_out;
        in.reference(ref_state, ref_out);
        // one pass; a prompt of 30 then 7 single steps
        for (const std::vector<int64_t>& calls : {std::vector<int64_t>{n}, std::vector<int64_t>{30, 1, 1, 1, 1, 1, 1, 1}}) {
            const test::WkvResult got = test::run_wkv7(ctx(), in, calls, ops::Wkv7Kernel::Sequential);
            EXPECT_LT(rel_err(got.out, ref_out), 2e-5) << describe(h, n) << ", first call " << calls[0];
            EXPECT_LT(rel_err(got.state, ref_state), 2e-5) << describe(h, n) << ", first call " << calls[0];
            EXPECT_TRUE(test::all_finite(got.out) && test::all_finite(got.state));
            EXPECT_TRUE(got.guards_kept) << "written outside the state";
        }
    }
}

TEST_F(Rwkv, ShiftMixCarriesTheShiftAcrossCalls) {
    const int64_t n = 11, C = 193, x_stride = C + 4;
    for (const int64_t n_mix : {int64_t(6), int64_t(1)}) {
        const auto x = test::random_floats(size_t(2 + n * x_stride), uint32_t(n_mix + 7));
        const auto mix = test::random_floats(size_t(n_mix * C), uint32_t(n_mix + 8), 0.0f, 1.0f);
        const auto shift0 = test::random_floats(size_t(C), uint32_t(n_mix + 9));
        std::vector<float> ref_shift = shift0, ref(size_t(n_mix * n * C));
        cpu::rwkv_shift_mix(x.data() + 2, x_stride, n, C, ref_shift.data(), mix.data(), n_mix, ref.data());

        gpu::Buffer xb = upload(x), mb = upload(mix), sb = upload(shift0);
        // a prompt of 8 tokens, then 3 steps: each call's out holds its own tokens' mixes
        std::vector<float> got(ref.size());
        int64_t t0 = 0;
        for (const int64_t len : {int64_t(8), int64_t(1), int64_t(1), int64_t(1)}) {
            gpu::Buffer ob = upload(std::vector<float>(size_t(n_mix * len * C), 0.0f));
            run([&](gpu::Stream& s) {
                ops::rwkv_shift_mix(s, ops::f32_rows(xb, len, C, uint64_t(2 + t0 * x_stride), x_stride),
                                    ops::f32_vector(sb, C), ops::f32_rows(mb, n_mix, C), ops::f32_rows(ob, n_mix * len, C));
            });
            const auto o = test::download(ob);
            for (int64_t m = 0; m < n_mix; ++m)
                for (int64_t t = 0; t < len; ++t)
                    std::copy_n(o.begin() + (m * len + t) * C, C, got.begin() + (m * n + t0 + t) * C);
            t0 += len;
        }
        EXPECT_LT(test::max_abs_diff(got, ref), 1e-6) << n_mix << " mixes";
        EXPECT_EQ(test::download(sb), ref_shift) << "the shift is the last token";
    }
}

TEST_F(Rwkv, WkvInputsAndOutputMatchReference) {
    for (const Heads h : {Heads{3, 64}, Heads{5, 7}}) {
        const int64_t n = 9, C = h.C(), stride = 5 * C + 1;
        // rows [w | k | a | b | o | pad]; other rows [r | v | g]; the parameters one buffer
        auto rows = test::random_floats(size_t(n * stride), uint32_t(C + 1), -2.0f, 2.0f);
        const auto other = test::random_floats(size_t(n * 3 * C), uint32_t(C + 2));
        auto params = test::random_floats(size_t(7 * C), uint32_t(C + 3), -1.0f, 1.0f);
        for (int64_t c = 0; c < C; ++c) params[size_t(4 * C + c)] += 1.5f;  // ln_w around 1.5
        const float* w0 = &params[0];
        const float* a0 = w0 + C;
        const float* k_k = a0 + C;
        const float* k_a = k_k + C;
        const float* ln_w = k_a + C;
        const float* ln_b = ln_w + C;
        const float* r_k = ln_b + C;

        std::vector<float> ref = rows;
        cpu::Rwkv7InputsRef in;
        in.n_tokens = n, in.n_head = h.n_head, in.head_size = h.head_size;
        in.w = ref.data(), in.k = ref.data() + C, in.a = ref.data() + 2 * C;
        in.a_out = ref.data() + 2 * C, in.b_out = ref.data() + 3 * C;
        in.w_stride = in.k_stride = in.a_stride = in.a_out_stride = in.b_out_stride = stride;
        in.w0 = w0, in.a0 = a0, in.k_k = k_k, in.k_a = k_a;
        cpu::rwkv7_wkv_inputs(in);
        cpu::Rwkv7OutputRef out;
        out.n_tokens = n, out.n_head = h.n_head, out.head_size = h.head_size;
        out.o = out.y = ref.data() + 4 * C, out.o_stride = out.y_stride = stride;
        out.r = other.data(), out.v = other.data() + C, out.g = other.data() + 2 * C;
        out.r_stride = out.v_stride = out.g_stride = 3 * C;
        out.k = ref.data() + C, out.k_stride = stride;
        out.ln_w = ln_w, out.ln_b = ln_b, out.r_k = r_k;
        cpu::rwkv7_wkv_output(out);

        gpu::Buffer rb = upload(rows), ob = upload(other), pb = upload(params);
        auto row_view = [&](int which) { return ops::f32_rows(rb, n, C, uint64_t(which * C), stride); };
        auto other_view = [&](int which) { return ops::f32_rows(ob, n, C, uint64_t(which * C), 3 * C); };
        auto param = [&](int which) { return ops::f32_vector(pb, C, uint64_t(which * C)); };
        run([&](gpu::Stream& s) {
            ops::Rwkv7InputsArgs a;
            a.n_head = h.n_head, a.head_size = h.head_size;
            a.w = row_view(0), a.k = row_view(1), a.a = row_view(2), a.b = row_view(3);
            a.w0 = param(0), a.a0 = param(1), a.k_k = param(2), a.k_a = param(3);
            ops::rwkv7_wkv_inputs(s, a);
            s.barrier("the output reads the modified k");
            ops::Rwkv7OutputArgs o;
            o.n_head = h.n_head, o.head_size = h.head_size;
            o.o = row_view(4), o.k = row_view(1);
            o.r = other_view(0), o.v = other_view(1), o.g = other_view(2);
            o.ln_w = param(4), o.ln_b = param(5), o.r_k = param(6);
            ops::rwkv7_wkv_output(s, o);
        });
        EXPECT_LT(rel_err(test::download(rb), ref), 2e-6) << describe(h, n);
    }
}

TEST_F(Rwkv, ValueMixAndLoraActivations) {
    const int64_t n = 6, C = 71, stride = 3 * C + 2;
    const auto rows = test::random_floats(size_t(n * stride), 41, -4.0f, 4.0f);  // [v | v_first | v_mix | pad]
    const auto v0 = test::random_floats(size_t(C), 42);
    std::vector<float> ref = rows;
    cpu::rwkv7_value_mix(ref.data(), stride, ref.data() + C, stride, ref.data() + 2 * C, stride, v0.data(), n, C);
    gpu::Buffer rb = upload(rows), vb = upload(v0);
    auto view = [&](int which) { return ops::f32_rows(rb, n, C, uint64_t(which * C), stride); };
    run([&](gpu::Stream& s) { ops::rwkv7_value_mix(s, view(0), view(1), view(2), ops::f32_vector(vb, C)); });
    EXPECT_LT(test::max_abs_diff(test::download(rb), ref), 2e-6);

    for (const auto act : {cpu::RwkvLoraAct::Tanh, cpu::RwkvLoraAct::Sigmoid}) {
        std::vector<float> x = test::random_floats(size_t(n * C), 43, -6.0f, 6.0f);
        x[0] = 90.0f, x[1] = -90.0f;  // saturated, not NaN
        std::vector<float> want(x.size());
        cpu::rwkv_lora_act(x.data(), want.data(), int64_t(x.size()), act);
        gpu::Buffer xb = upload(x);
        const ops::TensorView v = ops::f32_rows(xb, n, C);
        run([&](gpu::Stream& s) {
            ops::rwkv_lora_act(s, v, v, act == cpu::RwkvLoraAct::Tanh ? ops::RwkvLoraAct::Tanh : ops::RwkvLoraAct::Sigmoid);
        });
        EXPECT_LT(test::max_abs_diff(test::download(xb), want), 2e-6);
    }
}

TEST_F(Rwkv, RefusesBadOperands) {
    gpu::Buffer a = upload(std::vector<float>(4096, 0.5f)), b = upload(std::vector<float>(4096, 0.5f));
    ops::RwkvWkv7Args w;
    w.n_head = 2, w.head_size = 8;
    w.state = ops::f32_rows(a, 16, 8);
    w.r = w.w = w.k = w.v = w.a = w.b = ops::f32_rows(b, 3, 16);
    w.out = ops::f32_rows(a, 3, 16, 1024);
    run([&](gpu::Stream& s) { ops::rwkv_wkv7(s, w); });  // fine
    auto throws = [&](ops::RwkvWkv7Args bad) {
        EXPECT_THROW(run([&](gpu::Stream& s) { ops::rwkv_wkv7(s, bad); }), ops::ShapeError);
    };
    ops::RwkvWkv7Args bad = w;
    bad.out = ops::f32_rows(a, 3, 16, 100);  // over the state
    throws(bad);
    bad = w, bad.out = ops::f32_rows(b, 3, 16, 8);  // over r
    throws(bad);
    bad = w, bad.k = ops::f32_rows(b, 3, 15);  // wrong width
    throws(bad);
    bad = w, bad.state = ops::f32_rows(a, 16, 8, 0, 9);  // not packed
    throws(bad);
    bad = w, bad.head_size = 256, bad.n_head = 1, bad.state = ops::f32_rows(a, 256, 256);  // head too large
    throws(bad);
    bad = w, bad.n_head = 0;
    throws(bad);

    // the shift mix: out must be packed and apart from x; mix as wide as x
    const ops::TensorView x = ops::f32_rows(a, 4, 32), sh = ops::f32_vector(a, 32, 256), mx = ops::f32_rows(a, 2, 32, 512);
    run([&](gpu::Stream& s) { ops::rwkv_shift_mix(s, x, sh, mx, ops::f32_rows(b, 8, 32)); });
    EXPECT_THROW(run([&](gpu::Stream& s) { ops::rwkv_shift_mix(s, x, sh, mx, ops::f32_rows(a, 8, 32, 16)); }),
                 ops::ShapeError);
    EXPECT_THROW(run([&](gpu::Stream& s) { ops::rwkv_shift_mix(s, x, sh, ops::f32_rows(a, 2, 31, 512), ops::f32_rows(b, 8, 32)); }),
                 ops::ShapeError);
    EXPECT_THROW(run([&](gpu::Stream& s) { ops::rwkv_shift_mix(s, x, sh, mx, ops::f32_rows(b, 8, 32, 0, 40)); }),
                 ops::ShapeError);

    // the inputs: the written operands pairwise apart
    ops::Rwkv7InputsArgs in;
    in.n_head = 2, in.head_size = 8;
    in.w = ops::f32_rows(b, 3, 16, 0, 64), in.k = ops::f32_rows(b, 3, 16, 16, 64);
    in.a = ops::f32_rows(b, 3, 16, 32, 64), in.b = ops::f32_rows(b, 3, 16, 48, 64);
    in.w0 = in.a0 = in.k_k = in.k_a = ops::f32_vector(a, 16);
    run([&](gpu::Stream& s) { ops::rwkv7_wkv_inputs(s, in); });
    in.b = in.a;
    EXPECT_THROW(run([&](gpu::Stream& s) { ops::rwkv7_wkv_inputs(s, in); }), ops::ShapeError);

    // the output: o apart from its inputs; eps not negative
    ops::Rwkv7OutputArgs o;
    o.n_head = 2, o.head_size = 8;
    o.o = ops::f32_rows(a, 3, 16, 2048);
    o.r = o.k = o.v = o.g = ops::f32_rows(b, 3, 16);
    o.ln_w = o.ln_b = o.r_k = ops::f32_vector(b, 16, 64);
    run([&](gpu::Stream& s) { ops::rwkv7_wkv_output(s, o); });
    ops::Rwkv7OutputArgs obad = o;
    obad.o = o.g;
    EXPECT_THROW(run([&](gpu::Stream& s) { ops::rwkv7_wkv_output(s, obad); }), ops::ShapeError);
    obad = o, obad.eps = -1.0f;
    EXPECT_THROW(run([&](gpu::Stream& s) { ops::rwkv7_wkv_output(s, obad); }), ops::ShapeError);

    // the activations: y is x or apart from it
    EXPECT_THROW(run([&](gpu::Stream& s) {
                     ops::rwkv_lora_act(s, ops::f32_rows(a, 2, 8), ops::f32_rows(a, 2, 8, 4), ops::RwkvLoraAct::Tanh);
                 }),
                 ops::ShapeError);
}

}  // namespace
}  // namespace vkllm
