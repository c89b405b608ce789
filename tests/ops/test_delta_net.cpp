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
#include "delta_net_test_data.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "op_test_data.h"
#include "ops/delta_net_ops.h"
#include "test_support.h"

namespace vkllm {
namespace {

using test::delta::Case;
using test::delta::describe;
using test::delta::Operands;
using test::delta::rel_err;

class DeltaNet : public test::GpuTest {
protected:
    gpu::Buffer upload(const std::vector<float>& v) { return test::upload(ctx(), v); }
    std::vector<float> download(const gpu::Buffer& b) { return test::download(b); }

    // Runs the tokens in calls ending at each of `splits`, the output into its own buffer or
    // (in_place) over v, and compares the output and the final state with one reference pass.
    void check(const Case& c, const std::vector<int64_t>& splits, bool in_place = false) {
        const Operands o(c);
        const auto [ref_out, ref_st] = o.reference();
        const test::delta::Result got =
            test::delta::run(ctx(), o, splits, ops::DeltaNetKernel::Sequential, in_place);
        const std::string what = describe(c) + ", " + std::to_string(splits.size()) + " calls";
        EXPECT_LT(rel_err(got.out, ref_out), 5e-6) << what;
        EXPECT_LT(rel_err(got.state, ref_st), 5e-6) << what;
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
