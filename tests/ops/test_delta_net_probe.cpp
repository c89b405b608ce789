// The state probes of a Gated DeltaNet layer against the CPU reference (cpu/ref_state_probe.h):
// the state's norm and decay per token and value head (ops::delta_net_state_scan), and a value
// head's token-to-token mixing map (ops::delta_net_mix_map, checked against the UT form in double
// and against the layer itself: from a zero state, sum_s M[t][s] v_s equals the op's output for
// every value column). Decays per head and per key row, interleaved and tiled heads, q and k
// normalised in the kernel or before it, whole maps and a tile inside a wider map.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cpu/ref_state_probe.h"
#include "delta_net_test_data.h"
#include "gpu_test.h"
#include "ops/state_probe_ops.h"

namespace vkllm {
namespace {

using test::delta::Case;
using test::delta::describe;
using test::delta::Operands;

constexpr auto kI = DeltaHeadShare::Interleaved;
constexpr auto kT = DeltaHeadShare::Tiled;

// A tile of the map: rows q_first.. and columns k_first.., in a map buffer `stride` wide.
struct Tile {
    int64_t q_first, n_q, k_first, n_k, stride;
};

class DeltaNetProbe : public test::GpuTest {
protected:
    // Every value head's tile on the GPU, [head][n_q][n_k].
    std::vector<std::vector<float>> maps(const Operands& o, const Tile& tile) {
        const Case& c = o.c;
        gpu::Buffer qkvb = test::upload(ctx(), o.qkv), gb = test::upload(ctx(), o.gates),
                    sb = test::upload(ctx(), o.state);
        gpu::Buffer ob(ctx(), size_t(c.n_tokens * c.n_head_v * c.d_v) * 4, gpu::Memory::Device);
        gpu::Buffer mb(ctx(), size_t(c.n_head_v * tile.n_q * tile.stride) * 4, gpu::Memory::Device);
        gpu::Stream s(ctx());
        s.begin();
        for (int64_t h = 0; h < c.n_head_v; ++h) {
            ops::DeltaNetMixMapArgs a;
            a.layer = o.args(0, c.n_tokens, qkvb, gb, sb, ob, 0, 0);
            a.head = h, a.q_first = tile.q_first, a.k_first = tile.k_first;
            a.map = ops::f32_rows(mb, tile.n_q, tile.n_k, uint64_t(h * tile.n_q * tile.stride), tile.stride);
            ops::delta_net_mix_map(s, a);
        }
        s.submit_and_wait();
        const std::vector<float> all = test::download(mb);
        std::vector<std::vector<float>> out(size_t(c.n_head_v));
        for (int64_t h = 0; h < c.n_head_v; ++h)
            for (int64_t r = 0; r < tile.n_q; ++r)
                for (int64_t col = 0; col < tile.n_k; ++col)
                    out[size_t(h)].push_back(all[size_t((h * tile.n_q + r) * tile.stride + col)]);
        return out;
    }
};

TEST_F(DeltaNetProbe, MixMapMatchesReferenceAndTheLayersOutput) {
    const Case cases[] = {{37, 2, 4, 7, 5, kI, false, true}, {23, 1, 2, 33, 3, kT, true, false}};
    for (const Case& c : cases) {
        Operands o(c);
        std::fill(o.state.begin(), o.state.end(), 0.0f);  // the map is the mixing from a zero state
        const int64_t n = c.n_tokens, dv_all = c.n_head_v * c.d_v;
        const auto gpu_maps = maps(o, {0, n, 0, n, n});
        // a tile inside a wider map: rows 5..13 against keys 3..13, in rows 16 wide
        const Tile tile{5, 9, 3, 11, 16};
        const auto gpu_tiles = maps(o, tile);
        const std::vector<float> out = test::delta::run(ctx(), o, {n}).out;  // the layer's output (the op's)
        std::vector<float> ref_out(out.size(), 0.0f);
        for (int64_t h = 0; h < c.n_head_v; ++h) {
            std::vector<float> st(o.state);
            const std::vector<float> ref = cpu::delta_net_mix_map(o.ref(st.data(), ref_out.data()), h);
            const std::string what = describe(c) + ", head " + std::to_string(h);
            EXPECT_LT(test::delta::rel_err(gpu_maps[size_t(h)], ref), 2e-5) << what;
            std::vector<float> ref_tile;
            for (int64_t r = 0; r < tile.n_q; ++r)
                for (int64_t col = 0; col < tile.n_k; ++col)
                    ref_tile.push_back(ref[size_t((tile.q_first + r) * n + tile.k_first + col)]);
            EXPECT_LT(test::delta::rel_err(gpu_tiles[size_t(h)], ref_tile), 2e-5) << what << ", a tile";
            // sum_s M[t][s] v_s[j] against the layer's out_t[j], every value column of the head
            std::vector<float> mixed, layer;
            for (int64_t t = 0; t < n; ++t)
                for (int64_t j = 0; j < c.d_v; ++j) {
                    double sum = 0;
                    for (int64_t s = 0; s < n; ++s)
                        sum += double(gpu_maps[size_t(h)][size_t(t * n + s)]) *
                               o.qkv[size_t(s * o.qkv_stride + o.v_col + h * c.d_v + j)];
                    mixed.push_back(float(sum));
                    layer.push_back(out[size_t(t * dv_all + h * c.d_v + j)]);
                }
            EXPECT_LT(test::delta::rel_err(mixed, layer), 2e-5) << what << ", sum_s M v_s against the output";
            EXPECT_GT(*std::max_element(layer.begin(), layer.end()), 0.01f) << what << ": an output to compare";
        }
    }
}

// Norm and decay per token from a carried state, 19 tokens (two rounds of the kernel's sums), 70
// value columns (more than one per invocation), decays per key row, k normalised in the kernel.
TEST_F(DeltaNetProbe, StateTraceMatchesReference) {
    const Case c{19, 2, 4, 7, 70, kT, true, true};
    const Operands o(c);
    std::vector<float> ref_state = o.state, scratch(size_t(c.n_tokens * c.n_head_v * c.d_v));
    const cpu::StateTrace ref = cpu::delta_net_state_trace(o.ref(ref_state.data(), scratch.data()));
    gpu::Buffer qkvb = test::upload(ctx(), o.qkv), gb = test::upload(ctx(), o.gates), sb = test::upload(ctx(), o.state);
    gpu::Buffer ob(ctx(), scratch.size() * 4, gpu::Memory::Device);
    gpu::Buffer tb(ctx(), size_t(c.n_tokens * c.n_head_v * 2) * 4, gpu::Memory::Device);
    gpu::Buffer wb(ctx(), o.state.size() * 4, gpu::Memory::Device);
    ops::DeltaNetStateScanArgs a;
    a.layer = o.args(0, c.n_tokens, qkvb, gb, sb, ob, 0, 0);
    a.out = ops::f32_rows(tb, c.n_tokens, c.n_head_v * 2);
    a.work = ops::f32_rows(wb, 1, int64_t(o.state.size()));
    gpu::Stream s(ctx());
    s.begin();
    ops::delta_net_state_scan(s, a);
    s.submit_and_wait();
    const std::vector<float> got = test::download(tb);
    std::vector<float> norm, decay;
    for (size_t i = 0; i < got.size(); i += 2) norm.push_back(got[i]), decay.push_back(got[i + 1]);
    EXPECT_LT(test::delta::rel_err(norm, ref.norm), 2e-5);
    EXPECT_LT(test::delta::rel_err(decay, ref.decay), 2e-6);
    EXPECT_EQ(test::download(sb), o.state) << "the layer's state is untouched";
    EXPECT_LT(test::delta::rel_err(test::download(wb), ref_state), 2e-5) << "the work copy ends as the state would";
    auto bad = a;
    bad.work = ops::f32_rows(sb, 1, int64_t(o.state.size()));  // work over the state
    EXPECT_THROW(ops::delta_net_state_scan(s, bad), ops::ShapeError);
}

TEST_F(DeltaNetProbe, MixMapRefusesTilesOutsideTheTokensAndBadHeads) {
    const Case c{6, 1, 2, 7, 3, kI, false, true};
    const Operands o(c);
    gpu::Buffer qkvb = test::upload(ctx(), o.qkv), gb = test::upload(ctx(), o.gates), sb = test::upload(ctx(), o.state);
    gpu::Buffer ob(ctx(), 256, gpu::Memory::Device), mb(ctx(), 256, gpu::Memory::Device);
    ops::DeltaNetMixMapArgs a;
    a.layer = o.args(0, c.n_tokens, qkvb, gb, sb, ob, 0, 0);
    a.map = ops::f32_rows(mb, 4, 4);
    gpu::Stream s(ctx());
    s.begin();
    auto bad = a;
    bad.q_first = 3;  // rows 3..6 of 6 tokens
    EXPECT_THROW(ops::delta_net_mix_map(s, bad), ops::ShapeError);
    bad = a;
    bad.head = 2;
    EXPECT_THROW(ops::delta_net_mix_map(s, bad), ops::ShapeError);
    bad = a;
    bad.map = bad.layer.g;  // the map over the gates
    bad.map.rows = bad.map.cols = 4;
    EXPECT_THROW(ops::delta_net_mix_map(s, bad), ops::ShapeError);
    s.submit_and_wait();
}

}  // namespace
}  // namespace vkllm
