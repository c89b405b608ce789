// The state probes' kernels (ops/state_probe_ops.h) against the CPU reference
// (cpu/ref_state_probe.h) on odd shapes: Mamba-2 with grouped B and a dt bias, its operands
// columns of wider rows, in two passes that carry the state and the mixing map's key rows;
// Mamba-1's per-channel decay; RWKV-7 with a head size below and above the workgroup; and bad
// operands refused. CTest runs it natively and under VKLLM_LIMITS=mobile.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cpu/ref_ops.h"
#include "cpu/ref_state_probe.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/state_probe_ops.h"
#include "test_support.h"

namespace vkllm {
namespace {

// Largest difference relative to the largest |reference| (at least 1).
double rel_err(const std::vector<float>& got, const std::vector<float>& ref) {
    double m = 1e-6;
    for (float r : ref) m = std::max(m, double(std::fabs(r)));
    return test::max_abs_diff(got, ref) / m;
}

class StateProbeOps : public test::GpuTest {
protected:
    gpu::Buffer upload(const std::vector<float>& v) {
        gpu::Buffer b(ctx(), std::max<size_t>(v.size(), 1) * 4, gpu::Memory::Device);
        if (!v.empty()) b.upload(v.data(), v.size() * 4);
        return b;
    }
    static std::vector<float> download(const gpu::Buffer& b, size_t n, size_t first = 0) {
        std::vector<float> all(first + n);
        b.download(all.data(), all.size() * 4);
        return std::vector<float>(all.begin() + long(first), all.end());
    }
    template <class F> void run(F&& record) {
        gpu::Stream s(ctx());
        s.begin();
        record(s);
        s.submit_and_wait();
    }
};

// Splits [n][n_head][2] pairs into norms and decays.
void split(const std::vector<float>& pairs, std::vector<float>& norm, std::vector<float>& decay) {
    for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
        norm.push_back(pairs[i]);
        decay.push_back(pairs[i + 1]);
    }
}

TEST_F(StateProbeOps, Mamba2NormsDecaysAndMixingMapInTwoPasses) {
    // Passes of 21 and 16 tokens: the kernel sums its norms 16 tokens at a time.
    const int64_t n_head = 6, head_dim = 5, d_state = 7, n_group = 3, n = 37, first_pass = 21, key_rows = 40;
    const int64_t d_inner = n_head * head_dim, gs = n_group * d_state;
    // One row per token: [pad | x | B | C | dt | pad], as the conv's output and the in-projection.
    const int64_t stride = 2 + d_inner + 2 * gs + n_head + 1;
    const int64_t x_at = 2, b_at = x_at + d_inner, c_at = b_at + gs, dt_at = c_at + gs;
    const std::vector<float> rows = test::random_floats(size_t(n * stride), 11);
    const std::vector<float> a = test::random_floats(size_t(n_head), 12, -1.2f, -0.1f);
    const std::vector<float> dt_bias = test::random_floats(size_t(n_head), 13, -0.5f, 0.5f);
    std::vector<float> state = test::random_floats(size_t(d_inner * d_state), 14, -0.5f, 0.5f);

    std::vector<float> ref_state = state;
    cpu::SsmStateRef r;
    r.n_tokens = n, r.n_head = n_head, r.head_dim = head_dim, r.d_state = d_state, r.n_group = n_group;
    r.state = ref_state.data(), r.x = rows.data() + x_at, r.b = rows.data() + b_at, r.dt = rows.data() + dt_at;
    r.dt_bias = dt_bias.data(), r.a = a.data(), r.x_stride = r.b_stride = r.dt_stride = stride;
    const cpu::StateTrace want = cpu::ssm_state_trace(r);
    cpu::SsmMixMapRef mr;
    mr.n_tokens = n, mr.n_head = n_head, mr.d_state = d_state, mr.n_group = n_group;
    mr.b = rows.data() + b_at, mr.c = rows.data() + c_at, mr.dt = rows.data() + dt_at, mr.dt_bias = dt_bias.data();
    mr.a = a.data(), mr.b_stride = mr.c_stride = mr.dt_stride = stride;

    // The state after the first pass, for the second (the layer's scan would have written it).
    std::vector<float> mid_state = state;
    cpu::SsmStateRef r1 = r;
    r1.n_tokens = first_pass, r1.state = mid_state.data();
    cpu::ssm_state_trace(r1);

    gpu::Buffer rows_b = upload(rows), a_b = upload(a), bias_b = upload(dt_bias);
    const uint64_t work_floats = ops::state_work_floats(d_inner * d_state, n_head, gs, key_rows);
    gpu::Buffer work(ctx(), work_floats * 4, gpu::Memory::Device);
    std::vector<float> norm, decay;
    for (const int head : {1, 5}) {
        norm.clear(), decay.clear();
        std::vector<float> map_rows;
        for (int pass = 0; pass < 2; ++pass) {
            const int64_t t0 = pass == 0 ? 0 : first_pass, T = pass == 0 ? first_pass : n - first_pass;
            gpu::Buffer st = upload(pass == 0 ? state : mid_state);
            gpu::Buffer out(ctx(), uint64_t(T * n_head * 2) * 4, gpu::Memory::Device);
            gpu::Buffer map(ctx(), uint64_t(T * key_rows) * 4, gpu::Memory::Device);
            const uint64_t row0 = uint64_t(t0 * stride);
            ops::SsmStateScanArgs s;
            s.n_head = n_head, s.n_group = n_group;
            s.state = ops::f32_rows(st, d_inner, d_state);
            s.x = ops::f32_rows(rows_b, T, d_inner, row0 + x_at, stride);
            s.b = ops::f32_rows(rows_b, T, gs, row0 + b_at, stride);
            s.dt = ops::f32_rows(rows_b, T, n_head, row0 + dt_at, stride);
            s.dt_bias = ops::f32_vector(bias_b, n_head), s.a = ops::f32_vector(a_b, n_head);
            s.out = ops::f32_rows(out, T, n_head * 2);
            s.work = ops::f32_rows(work, 1, int64_t(work_floats));
            s.keys = {key_rows, t0, pass > 0};
            ops::SsmMixMapArgs m;
            m.n_head = n_head, m.n_group = n_group, m.d_state = d_state, m.state_floats = d_inner * d_state;
            m.head = head, m.c = ops::f32_rows(rows_b, T, gs, row0 + c_at, stride), m.work = s.work;
            m.map = ops::f32_rows(map, T, key_rows), m.keys = s.keys;
            run([&](gpu::Stream& q) {
                ops::ssm_state_scan(q, s);
                q.barrier("the key rows are written before the map reads them");
                ops::ssm_mix_map(q, m);
            });
            split(download(out, size_t(T * n_head * 2)), norm, decay);
            const std::vector<float> got = download(map, size_t(T * key_rows));
            map_rows.insert(map_rows.end(), got.begin(), got.end());
        }
        EXPECT_LT(rel_err(norm, want.norm), 2e-5);
        EXPECT_LT(rel_err(decay, want.decay), 2e-6);
        mr.head = head;
        const std::vector<float> ref_map = cpu::ssm_mix_map(mr);
        std::vector<float> want_map(size_t(n * key_rows), 0.0f);
        for (int64_t t = 0; t < n; ++t)
            for (int64_t s = 0; s < n; ++s) want_map[size_t(t * key_rows + s)] = ref_map[size_t(t * n + s)];
        EXPECT_LT(rel_err(map_rows, want_map), 2e-5) << "head " << head;
    }
}

// With a zero state, the map reproduces the scan's output: y_t = sum_s M[t][s] x_s (the dual form).
TEST(StateProbeReference, MixingMapIsTheScansDualForm) {
    const int64_t n_head = 2, head_dim = 3, d_state = 4, n = 6;
    const std::vector<float> x = test::random_floats(size_t(n * n_head * head_dim), 21);
    const std::vector<float> b = test::random_floats(size_t(n * d_state), 22);
    const std::vector<float> c = test::random_floats(size_t(n * d_state), 23);
    const std::vector<float> dt = test::random_floats(size_t(n * n_head), 24);
    const std::vector<float> a = {-0.7f, -0.3f};
    std::vector<float> state(size_t(n_head * head_dim * d_state), 0.0f);
    for (int64_t h = 0; h < n_head; ++h) {
        cpu::SsmMixMapRef mr;
        mr.n_tokens = n, mr.n_head = n_head, mr.d_state = d_state, mr.head = h;
        mr.b = b.data(), mr.c = c.data(), mr.dt = dt.data(), mr.a = a.data();
        mr.b_stride = mr.c_stride = d_state, mr.dt_stride = n_head;
        const std::vector<float> m = cpu::ssm_mix_map(mr);
        // The scan itself, channel by channel.
        for (int64_t i = 0; i < head_dim; ++i) {
            std::vector<double> s(size_t(d_state), 0.0);
            for (int64_t t = 0; t < n; ++t) {
                const double sp = std::log1p(std::exp(double(dt[size_t(t * n_head + h)])));
                const double xv = x[size_t(t * n_head * head_dim + h * head_dim + i)];
                double y = 0, dual = 0;
                for (int64_t j = 0; j < d_state; ++j) {
                    s[size_t(j)] = s[size_t(j)] * std::exp(sp * a[size_t(h)]) + b[size_t(t * d_state + j)] * xv * sp;
                    y += s[size_t(j)] * c[size_t(t * d_state + j)];
                }
                for (int64_t k = 0; k <= t; ++k)
                    dual += m[size_t(t * n + k)] * x[size_t(k * n_head * head_dim + h * head_dim + i)];
                EXPECT_NEAR(dual, y, 1e-5 * (1 + std::fabs(y))) << "head " << h << " token " << t;
            }
        }
    }
}

TEST_F(StateProbeOps, Mamba1NormsAndMeanDecay) {
    const int64_t d_inner = 11, d_state = 5, n = 19;
    const std::vector<float> x = test::random_floats(size_t(n * d_inner), 31);
    const std::vector<float> dt = test::random_floats(size_t(n * d_inner), 32);
    // B | C rows of x_proj's output: B's view strided over both.
    const std::vector<float> bc = test::random_floats(size_t(n * 2 * d_state), 33);
    const std::vector<float> a = test::random_floats(size_t(d_inner * d_state), 34, -2.0f, -0.05f);
    const std::vector<float> state = test::random_floats(size_t(d_inner * d_state), 35, -0.5f, 0.5f);
    std::vector<float> ref_state = state;
    cpu::Mamba1StateRef r;
    r.n_tokens = n, r.d_inner = d_inner, r.d_state = d_state, r.state = ref_state.data();
    r.x = x.data(), r.b = bc.data(), r.dt = dt.data(), r.a = a.data();
    r.x_stride = r.dt_stride = d_inner, r.b_stride = 2 * d_state;
    const cpu::StateTrace want = cpu::mamba1_state_trace(r);

    gpu::Buffer x_b = upload(x), dt_b = upload(dt), bc_b = upload(bc), a_b = upload(a), st = upload(state);
    gpu::Buffer out(ctx(), uint64_t(n * 2) * 4, gpu::Memory::Device);
    const uint64_t work_floats = ops::state_work_floats(d_inner * d_state, 1, d_state, 0);
    gpu::Buffer work(ctx(), work_floats * 4, gpu::Memory::Device);
    ops::SsmStateScanArgs s;
    s.mamba1 = true;
    s.state = ops::f32_rows(st, d_inner, d_state);
    s.x = ops::f32_rows(x_b, n, d_inner), s.dt = ops::f32_rows(dt_b, n, d_inner);
    s.b = ops::f32_rows(bc_b, n, d_state, 0, 2 * d_state), s.a = ops::f32_rows(a_b, d_inner, d_state);
    s.out = ops::f32_rows(out, n, 2), s.work = ops::f32_rows(work, 1, int64_t(work_floats));
    run([&](gpu::Stream& q) { ops::ssm_state_scan(q, s); });
    std::vector<float> norm, decay;
    split(download(out, size_t(n * 2)), norm, decay);
    EXPECT_LT(rel_err(norm, want.norm), 2e-5);
    EXPECT_LT(rel_err(decay, want.decay), 2e-6);

    // A Mamba-1 layer has no mixing map; a work view over the state is refused.
    s.keys = {4, 0, false};
    EXPECT_THROW(run([&](gpu::Stream& q) { ops::ssm_state_scan(q, s); }), ops::ShapeError);
    s.keys = {};
    s.work = ops::f32_rows(st, 1, int64_t(work_floats));
    EXPECT_THROW(run([&](gpu::Stream& q) { ops::ssm_state_scan(q, s); }), ops::ShapeError);
}

TEST_F(StateProbeOps, Rwkv7NormsAndMeanDecay) {
    struct Shape {
        int64_t n_head, head_size, n;
    };
    for (const Shape sh : {Shape{3, 9, 6}, Shape{2, 80, 3}, Shape{1, 16, 35}}) {
        const int64_t C = sh.n_head * sh.head_size, N = sh.head_size, n = sh.n;
        // One row per token: w | k | v | a | b | pad, w a decay in (0.5, 1), a and b small.
        const int64_t stride = 5 * C + 1;
        std::vector<float> rows = test::random_floats(size_t(n * stride), uint32_t(41 + C), -0.3f, 0.3f);
        for (int64_t t = 0; t < n; ++t)
            for (int64_t c = 0; c < C; ++c) rows[size_t(t * stride + c)] = 0.75f + rows[size_t(t * stride + c)] * 0.8f;
        const std::vector<float> state = test::random_floats(size_t(C * N), uint32_t(42 + C), -0.5f, 0.5f);
        std::vector<float> ref_state = state;
        cpu::Rwkv7StateRef r;
        r.n_tokens = n, r.n_head = sh.n_head, r.head_size = N, r.state = ref_state.data(), r.stride = stride;
        r.w = rows.data(), r.k = rows.data() + C, r.v = rows.data() + 2 * C, r.a = rows.data() + 3 * C;
        r.b = rows.data() + 4 * C;
        const cpu::StateTrace want = cpu::rwkv7_state_trace(r);

        gpu::Buffer rows_b = upload(rows), st = upload(state);
        gpu::Buffer out(ctx(), uint64_t(n * sh.n_head * 2) * 4, gpu::Memory::Device);
        gpu::Buffer work(ctx(), uint64_t(C * N) * 4, gpu::Memory::Device);
        ops::Rwkv7StateScanArgs s;
        s.n_head = sh.n_head, s.head_size = N;
        s.state = ops::f32_rows(st, C, N);
        s.w = ops::f32_rows(rows_b, n, C, 0, stride), s.k = ops::f32_rows(rows_b, n, C, uint64_t(C), stride);
        s.v = ops::f32_rows(rows_b, n, C, uint64_t(2 * C), stride);
        s.a = ops::f32_rows(rows_b, n, C, uint64_t(3 * C), stride);
        s.b = ops::f32_rows(rows_b, n, C, uint64_t(4 * C), stride);
        s.out = ops::f32_rows(out, n, sh.n_head * 2), s.work = ops::f32_rows(work, 1, C * N);
        run([&](gpu::Stream& q) { ops::rwkv7_state_scan(q, s); });
        std::vector<float> norm, decay;
        split(download(out, size_t(n * sh.n_head * 2)), norm, decay);
        EXPECT_LT(rel_err(norm, want.norm), 2e-5) << sh.n_head << " heads of " << N;
        EXPECT_LT(rel_err(decay, want.decay), 2e-6) << sh.n_head << " heads of " << N;
    }
}

}  // namespace
}  // namespace vkllm
