// The state probes of a Gated DeltaNet layer through the recorder (model/probe_state.h) that the
// forward pass drives: the golden Qwen3.5 model's layer sizes (tests/golden/deltanet), the tap
// called with the layer's delta-rule operands over a prompt in passes and then a decode step as an
// eval of its own, the delta rule run after each tap as the block runs it. The traces (kind
// delta_net) equal the CPU reference's norms and decays over the passes, the maps equal
// cpu::delta_net_mix_map's over every position so far (key rows carried from pass to pass), a
// tile is the map's cut, the layer's state is what the delta rule alone leaves, and bad requests
// are refused by name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../ops/delta_net_test_data.h"
#include "cpu/ref_state_probe.h"
#include "gpu/device.h"
#include "model/model_internal.h"
#include "model/probe_state.h"
#include "test_support.h"
#include "vkllm/model.h"

namespace vkllm {
namespace {

using test::delta::Case;
using test::delta::Operands;
using test::delta::rel_err;

TEST(StateProbeDeltaNet, TracesAndMapsOverPassesAndEvals) {
    const uint64_t errors_before = gpu::validation_error_count();
    auto m = Model::load(test::source_dir() + "/tests/golden/deltanet/qwen35.gguf");
    const auto& in = m->internals();
    const model::ModelSpec& spec = in.spec();
    gpu::Context& ctx = in.context();
    int layer = -1, attention = -1;
    for (int l = 0; l < spec.n_layer; ++l) {
        const model::LayerSpec& L = spec.layers[size_t(l)];
        if (L.mixer == model::LayerMixer::GatedDeltaNet && layer < 0) layer = l;
        if (L.mixer == model::LayerMixer::Attention && attention < 0) attention = l;
    }
    ASSERT_GE(layer, 0);
    const model::SsmSpec& S = spec.layers[size_t(layer)].ssm;
    const int n = 18, n_head = S.n_head;
    // the layer's operands (random, q and k normalised in the kernel as the block asks)
    const Case c{n, S.n_group, S.n_head, S.d_state, S.head_dim(), S.delta_share, false, true};
    Operands o(c);
    std::fill(o.state.begin(), o.state.end(), 0.0f);  // a session's state at position 0

    ProbeConfig p;
    p.state_layers = {layer};
    AttentionHead tile{layer, 0};
    tile.query_first = 4, tile.query_count = 7, tile.key_first = 2, tile.key_count = 6;
    p.state_maps = {{layer, n_head - 1}, tile};
    model::StateProbeRecorder rec(ctx, spec, /*n_batch=*/8);
    rec.check(p);
    rec.configure(p);

    gpu::Buffer qkvb = test::upload(ctx, o.qkv), gb = test::upload(ctx, o.gates), sb = test::upload(ctx, o.state);
    gpu::Buffer ob(ctx, size_t(n * c.n_head_v * c.d_v) * 4, gpu::Memory::Device);
    // Tokens [t0, t1) as the block records them: the tap, then the delta rule; `first` starts an eval.
    auto pass = [&](int t0, int t1, bool first, ProbeResults* r) {
        gpu::Stream s(ctx);
        s.begin();
        const ops::GatedDeltaNetArgs a = o.args(t0, t1, qkvb, gb, sb, ob, uint64_t(t0 * c.n_head_v * c.d_v), 0);
        rec.tap_delta_net(s, layer, t0, a);
        ops::gated_delta_net(s, a);
        s.submit_and_wait();
        rec.read(t1 - t0, t0, r, first);
    };
    ProbeResults r;
    for (const auto& [t0, t1] : {std::pair{0, 8}, std::pair{8, 16}, std::pair{16, 17}}) pass(t0, t1, t0 == 0, &r);

    // The references over the 17 tokens of the eval, and the state the delta rule alone leaves.
    Operands prompt = o;
    prompt.c.n_tokens = 17;
    std::vector<float> ref_state = prompt.state, scratch(size_t(n * c.n_head_v * c.d_v));
    const cpu::StateTrace trace = cpu::delta_net_state_trace(prompt.ref(ref_state.data(), scratch.data()));
    EXPECT_LT(rel_err(test::download(sb), ref_state), 2e-5) << "the layer's state";
    ASSERT_EQ(r.state.size(), size_t(n_head));
    for (int h = 0; h < n_head; ++h) {
        const StateProbe& sp = r.state[size_t(h)];
        EXPECT_EQ(sp.layer, layer);
        EXPECT_EQ(sp.head, h);
        EXPECT_EQ(sp.kind, "delta_net");
        ASSERT_EQ(sp.norm.size(), 17u);
        std::vector<float> norm, decay;
        for (int t = 0; t < 17; ++t) {
            EXPECT_EQ(sp.positions[size_t(t)], t);
            norm.push_back(trace.norm[size_t(t * n_head + h)]);
            decay.push_back(trace.decay[size_t(t * n_head + h)]);
        }
        EXPECT_LT(rel_err(sp.norm, norm), 2e-5) << "head " << h;
        EXPECT_LT(rel_err(sp.decay, decay), 2e-6) << "head " << h;
    }
    ASSERT_EQ(r.state_maps.size(), 2u);
    const AttentionMap& a = r.state_maps[0];
    EXPECT_EQ(a.kind, MapKind::StateMixing);
    EXPECT_EQ(a.layer, layer);
    EXPECT_EQ(a.head, n_head - 1);
    ASSERT_EQ(a.n_query(), 17);
    ASSERT_EQ(a.n_key(), 17);
    std::vector<float> st(o.state);
    const std::vector<float> ref = cpu::delta_net_mix_map(prompt.ref(st.data(), scratch.data()), n_head - 1);
    EXPECT_LT(rel_err(a.probs, ref), 2e-5);
    // the tile: query positions 4..10, keys 2..7 of head 0's map
    const std::vector<float> ref0 = cpu::delta_net_mix_map(prompt.ref(st.data(), scratch.data()), 0);
    const AttentionMap& t = r.state_maps[1];
    ASSERT_EQ(t.n_query(), 7);
    ASSERT_EQ(t.n_key(), 6);
    std::vector<float> cut;
    for (int q = 0; q < 7; ++q)
        for (int k = 0; k < 6; ++k) cut.push_back(ref0[size_t((4 + q) * 17 + 2 + k)]);
    EXPECT_LT(rel_err(t.probs, cut), 2e-5);

    // The next token as an eval of its own: one row over every key the probe has seen.
    ProbeResults step;
    pass(17, 18, true, &step);
    const std::vector<float> full = cpu::delta_net_mix_map(o.ref(st.data(), scratch.data()), n_head - 1);
    ASSERT_EQ(step.state_maps[0].n_query(), 1);
    EXPECT_EQ(step.state_maps[0].query_pos[0], 17);
    ASSERT_EQ(step.state_maps[0].n_key(), 18);
    EXPECT_LT(rel_err(step.state_maps[0].probs, std::vector<float>(full.end() - 18, full.end())), 2e-5);

    // A head outside the layer, a map of an attention layer: refused by name.
    ProbeConfig bad;
    bad.state_maps = {{layer, n_head}};
    EXPECT_THROW(rec.check(bad), std::invalid_argument);
    if (attention >= 0) {
        bad.state_maps = {{attention, 0}};
        EXPECT_THROW(rec.check(bad), std::invalid_argument);
    }
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

}  // namespace
}  // namespace vkllm
