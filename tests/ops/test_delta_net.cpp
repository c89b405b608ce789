// The gated delta rule (ops::gated_delta_net) against the CPU reference (cpu/ref_delta_net.h):
// odd head sizes, several heads, value heads sharing key heads both ways (interleaved and tiled),
// a decay per head or per key row, q and k L2-normalised in the kernel or before it, operands
// inside wider rows as Qwen3-Next lays them out (q | k | v of the conv's output row), a prompt
// followed by decode steps equal to one pass, the output written over v, and bad operands; and
// delta_net_gates (g and beta from the projections) on Qwen3-Next's and Qwen3.5's layouts.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "cpu/ref_delta_net.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "op_test_data.h"
#include "ops/delta_net_ops.h"
#include "test_support.h"

namespace vkllm {
namespace {

double rel_err(const std::vector<float>& got, const std::vector<float>& ref) {
    double m = 1.0;
    for (float r : ref) m = std::max(m, double(std::fabs(r)));
    return test::max_abs_diff(got, ref) / m;
}

struct Case {
    int64_t n_tokens, n_head_k, n_head_v, d_k, d_v;
    DeltaHeadShare share;
    bool per_key, l2;
};

std::string describe(const Case& c) {
    return std::to_string(c.n_tokens) + " tokens, heads " + std::to_string(c.n_head_k) + "/" +
           std::to_string(c.n_head_v) + ", d_k " + std::to_string(c.d_k) + ", d_v " + std::to_string(c.d_v) +
           (c.share == DeltaHeadShare::Tiled ? " tiled" : " interleaved") + (c.per_key ? " per-key decay" : "") +
           (c.l2 ? " l2" : "");
}

// One layer's operands on the host: qkv rows [pad | q | k | v | pad], gate rows [g | beta | pad].
struct Operands {
    Case c;
    int64_t qkv_stride, q_col, k_col, v_col, gate_stride, g_cols;
    std::vector<float> qkv, gates, state;

    explicit Operands(const Case& cs) : c(cs) {
        q_col = 2;
        k_col = q_col + c.n_head_k * c.d_k;
        v_col = k_col + c.n_head_k * c.d_k;
        qkv_stride = v_col + c.n_head_v * c.d_v + 1;
        g_cols = c.per_key ? c.n_head_v * c.d_k : c.n_head_v;
        gate_stride = g_cols + c.n_head_v + 3;
        const uint32_t seed = uint32_t(c.n_tokens * 31 + c.n_head_v * 7 + c.d_k);
        qkv = test::random_floats(size_t(c.n_tokens * qkv_stride), seed, -1.0f, 1.0f);
        if (!c.l2) {  // the kernel's inputs are normalised already: normalise them here
            for (int64_t t = 0; t < c.n_tokens; ++t)
                for (int64_t h = 0; h < 2 * c.n_head_k; ++h) {
                    float* x = qkv.data() + t * qkv_stride + q_col + h * c.d_k;
                    cpu::delta_net_l2_norm(x, x, c.d_k, 1e-6f);
                }
        }
        gates = test::random_floats(size_t(c.n_tokens * gate_stride), seed + 1, -2.0f, -0.01f);  // log-decays
        for (int64_t t = 0; t < c.n_tokens; ++t)
            for (int64_t h = 0; h < c.n_head_v; ++h)
                gates[size_t(t * gate_stride + g_cols + h)] = 0.05f + 0.9f * float((t * 7 + h * 3) % 11) / 10.0f;
        state = test::random_floats(size_t(c.n_head_v * c.d_v * c.d_k), seed + 2, -0.5f, 0.5f);
    }

    cpu::DeltaNetRef ref(float* st, float* out) const {
        cpu::DeltaNetRef r;
        r.n_tokens = c.n_tokens, r.n_head_k = c.n_head_k, r.n_head_v = c.n_head_v, r.d_k = c.d_k, r.d_v = c.d_v;
        r.share = c.share, r.state = st;
        r.q = qkv.data() + q_col, r.k = qkv.data() + k_col, r.v = qkv.data() + v_col;
        r.q_stride = r.k_stride = r.v_stride = qkv_stride;
        r.g = gates.data(), r.g_stride = gate_stride, r.per_key_decay = c.per_key;
        r.beta = gates.data() + g_cols, r.beta_stride = gate_stride;
        r.out = out, r.out_stride = c.n_head_v * c.d_v;
        r.l2_norm_qk = c.l2;
        return r;
    }

    // The op's arguments for tokens [t0, t1); out rows [t1 - t0, n_head_v * d_v] from `out_first`.
    ops::GatedDeltaNetArgs args(int64_t t0, int64_t t1, const gpu::Buffer& qkvb, const gpu::Buffer& gb,
                                const gpu::Buffer& sb, const gpu::Buffer& ob, uint64_t out_first,
                                int64_t out_stride) const {
        const int64_t n = t1 - t0;
        const uint64_t row = uint64_t(t0 * qkv_stride), grow = uint64_t(t0 * gate_stride);
        ops::GatedDeltaNetArgs a;
        a.n_head_k = c.n_head_k, a.n_head_v = c.n_head_v, a.d_k = c.d_k, a.d_v = c.d_v, a.share = c.share;
        a.state = ops::f32_rows(sb, c.n_head_v * c.d_v, c.d_k);
        a.q = ops::f32_rows(qkvb, n, c.n_head_k * c.d_k, row + uint64_t(q_col), qkv_stride);
        a.k = ops::f32_rows(qkvb, n, c.n_head_k * c.d_k, row + uint64_t(k_col), qkv_stride);
        a.v = ops::f32_rows(qkvb, n, c.n_head_v * c.d_v, row + uint64_t(v_col), qkv_stride);
        a.g = ops::f32_rows(gb, n, g_cols, grow, gate_stride);
        a.beta = ops::f32_rows(gb, n, c.n_head_v, grow + uint64_t(g_cols), gate_stride);
        a.out = ops::f32_rows(ob, n, c.n_head_v * c.d_v, out_first, out_stride);
        a.l2_norm_qk = c.l2;
        return a;
    }
};

class DeltaNet : public test::GpuTest {
protected:
    gpu::Buffer upload(const std::vector<float>& v) { return test::upload(ctx(), v); }
    std::vector<float> download(const gpu::Buffer& b) { return test::download(b); }

    // Runs the tokens in calls ending at each of `splits`, the output into its own buffer or
    // (in_place) over v, and compares the output and the final state with one reference pass.
    void check(const Case& c, const std::vector<int64_t>& splits, bool in_place = false) {
        const Operands o(c);
        const int64_t dv_all = c.n_head_v * c.d_v;
        std::vector<float> ref_st = o.state, ref_out(size_t(c.n_tokens * dv_all));
        cpu::gated_delta_net(o.ref(ref_st.data(), ref_out.data()));

        gpu::Buffer qkvb = upload(o.qkv), gb = upload(o.gates), sb = upload(o.state);
        gpu::Buffer ob(ctx(), ref_out.size() * 4, gpu::Memory::Device);
        gpu::Stream s(ctx());
        s.begin();
        int64_t t0 = 0;
        for (int64_t t1 : splits) {
            ops::GatedDeltaNetArgs a = o.args(t0, t1, qkvb, gb, sb, ob, uint64_t(t0 * dv_all), 0);
            if (in_place) a.out = a.v;
            ops::gated_delta_net(s, a);
            s.barrier("the next tokens read the state");
            t0 = t1;
        }
        s.submit_and_wait();
        std::vector<float> got(ref_out.size());
        if (in_place) {
            const auto all = download(qkvb);
            for (int64_t t = 0; t < c.n_tokens; ++t)
                for (int64_t i = 0; i < dv_all; ++i)
                    got[size_t(t * dv_all + i)] = all[size_t(t * o.qkv_stride + o.v_col + i)];
        } else {
            got = download(ob);
        }
        const std::string what = describe(c) + ", " + std::to_string(splits.size()) + " calls";
        EXPECT_LT(rel_err(got, ref_out), 5e-6) << what;
        EXPECT_LT(rel_err(download(sb), ref_st), 5e-6) << what;
    }
};

constexpr auto kI = DeltaHeadShare::Interleaved;
constexpr auto kT = DeltaHeadShare::Tiled;

TEST_F(DeltaNet, MatchesReferenceForOddShapes) {
    const Case cases[] = {{5, 1, 1, 16, 16, kI, false, true},  {7, 2, 6, 13, 13, kI, false, true},
                          {9, 2, 6, 13, 13, kT, false, true},  {4, 3, 3, 33, 7, kT, true, false},
                          {6, 1, 3, 5, 70, kI, true, true},    {3, 2, 2, 130, 130, kI, false, true},
                          {1, 4, 4, 64, 64, kT, false, false}, {11, 1, 2, 1, 9, kI, false, false}};
    for (const Case& c : cases) check(c, {c.n_tokens});
}

// A prompt, then one-token decode steps carrying the state: the same as one pass.
TEST_F(DeltaNet, PromptThenDecodeStepsEqualOnePass) {
    check({10, 2, 4, 24, 24, kI, false, true}, {6, 7, 8, 9, 10});
    check({8, 1, 3, 17, 17, kT, true, true}, {1, 2, 3, 4, 5, 6, 7, 8});
}

TEST_F(DeltaNet, OutputOverValues) { check({7, 2, 4, 19, 19, kI, false, true}, {5, 6, 7}, true); }

// The gates from the projections: Qwen3-Next's rows [b | alpha] per key head (grouped), and
// Qwen3.5's separate alpha and b rows, with alpha + dt_bias over softplus' threshold on some.
TEST_F(DeltaNet, GatesMatchReference) {
    const int64_t n = 7;
    for (const auto& [n_head, hpg] : {std::pair<int64_t, int64_t>{6, 3}, {5, 0}}) {
        const int64_t gs = 2 * hpg, stride = hpg ? (n_head / hpg) * gs + 1 : n_head + 2;
        auto ba = test::random_floats(size_t(n * stride), uint32_t(n_head), -6.0f, 6.0f);
        auto dtb = test::random_floats(size_t(n_head), 5), a_h = test::random_floats(size_t(n_head), 6, -3.0f, -0.1f);
        // grouped: b at column 0 of each group, alpha at hpg; plain: b from column 0, alpha from 1
        const int64_t b_first = 0, alpha_first = hpg ? hpg : 1, cols = hpg ? (n_head / hpg - 1) * gs + hpg : n_head;
        ba[size_t(alpha_first)] = 30.0f;          // softplus(v) = v above 20
        ba[size_t(stride + b_first)] = -40.0f;    // sigmoid near 0
        std::vector<float> ref(size_t(n * 2 * n_head));
        cpu::delta_net_gates(ba.data() + alpha_first, stride, ba.data() + b_first, stride, dtb.data(), a_h.data(),
                             ref.data(), 2 * n_head, ref.data() + n_head, 2 * n_head, n, n_head, hpg ? hpg : n_head,
                             hpg ? gs : 0);
        gpu::Buffer bab = upload(ba), db = upload(dtb), ab = upload(a_h);
        gpu::Buffer out(ctx(), ref.size() * 4, gpu::Memory::Device);
        ops::DeltaNetGatesArgs g;
        g.n_head = n_head, g.heads_per_group = hpg, g.group_stride = hpg ? gs : 0;
        g.alpha = ops::f32_rows(bab, n, cols, uint64_t(alpha_first), stride);
        g.b = ops::f32_rows(bab, n, cols, uint64_t(b_first), stride);
        g.dt_bias = ops::f32_rows(db, 1, n_head);
        g.a = ops::f32_rows(ab, 1, n_head);
        g.g = ops::f32_rows(out, n, n_head, 0, 2 * n_head);
        g.beta = ops::f32_rows(out, n, n_head, uint64_t(n_head), 2 * n_head);
        gpu::Stream s(ctx());
        s.begin();
        ops::delta_net_gates(s, g);
        s.submit_and_wait();
        EXPECT_LT(rel_err(download(out), ref), 1e-6) << n_head << " heads, " << hpg << " per group";
        auto bad = g;
        bad.g = ops::f32_rows(bab, n, n_head, 0, stride);  // g over the inputs
        EXPECT_THROW(ops::delta_net_gates(s, bad), ops::ShapeError);
    }
}

TEST_F(DeltaNet, RefusesBadOperands) {
    const Case c{3, 2, 4, 8, 8, kI, false, true};
    const Operands o(c);
    gpu::Buffer qkvb = upload(o.qkv), gb = upload(o.gates), sb = upload(o.state);
    gpu::Buffer ob(ctx(), size_t(c.n_tokens * c.n_head_v * c.d_v) * 4, gpu::Memory::Device);
    auto run = [&](const ops::GatedDeltaNetArgs& a) {
        gpu::Stream s(ctx());
        s.begin();
        ops::gated_delta_net(s, a);
        s.submit_and_wait();
    };
    const ops::GatedDeltaNetArgs good = o.args(0, c.n_tokens, qkvb, gb, sb, ob, 0, 0);
    run(good);
    auto bad = good;
    bad.n_head_k = 3;  // 4 value heads do not share 3 key heads
    EXPECT_THROW(run(bad), ops::ShapeError);
    bad = good;
    bad.g.cols = c.n_head_v + 1;  // neither per head nor per key row
    EXPECT_THROW(run(bad), ops::ShapeError);
    bad = good;
    bad.beta.rows = c.n_tokens - 1;
    EXPECT_THROW(run(bad), ops::ShapeError);
    bad = good;
    bad.out = ops::f32_rows(sb, c.n_tokens, c.n_head_v * c.d_v);  // out over the state
    EXPECT_THROW(run(bad), ops::ShapeError);
    bad = good;
    bad.out = bad.k;  // out over k
    bad.out.cols = c.n_head_v * c.d_v;
    EXPECT_THROW(run(bad), ops::ShapeError);
    bad = good;
    bad.d_k = bad.d_v = 300;  // a key head over the limit
    EXPECT_THROW(run(bad), ops::ShapeError);
}

}  // namespace
}  // namespace vkllm
