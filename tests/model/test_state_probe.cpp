// The state probes through the forward pass (ProbeConfig::state, state_layers, state_maps) on the
// golden models: RWKV-7 (tests/golden/rwkv7) and the random Mamba-2 and Jamba models
// (tests/golden/ssm: Mamba-2 layers; Mamba-1 layers beside attention). A prompt runs in several
// passes (the state and the map's key rows carried); each head's last norm equals the norm of the
// session's own state after the eval, decays are forget gates in (0, 1), the logits are those of
// a run without probes, the maps of small passes equal those of one pass and are causal, a tile
// is the map's cut, and bad requests are refused by name. CTest runs it natively and under
// VKLLM_LIMITS=mobile.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "model/forward.h"
#include "model/model_internal.h"
#include "test_support.h"
#include "vkllm/model.h"

namespace vkllm {
namespace {

std::unique_ptr<Model> load(const std::string& dir, const std::string& name) {
    return Model::load(test::source_dir() + "/tests/golden/" + dir + "/" + name + ".gguf");
}
std::vector<int32_t> tokens(const std::string& dir, const std::string& name, size_t n) {
    std::vector<int32_t> t = test::read_ids(test::source_dir() + "/tests/golden/" + dir + "/" + name + ".tokens.txt");
    t.resize(std::min(n, t.size()));
    return t;
}

// Runs `ids` through f in passes of `pass` tokens as one eval; returns the last logits.
std::vector<float> run(model::Forward& f, const std::vector<int32_t>& ids, int pass, const ProbeConfig& p,
                       ProbeResults* r, int n_vocab) {
    std::vector<float> logits(static_cast<size_t>(n_vocab));
    for (int t0 = 0; t0 < int(ids.size()); t0 += pass) {
        const int n = std::min(pass, int(ids.size()) - t0);
        f.step(ids.data() + t0, n, t0, false, logits.data(), p, r, t0 == 0);
    }
    return logits;
}

double frobenius(const std::vector<float>& v, size_t first, size_t n) {
    double s = 0;
    for (size_t i = first; i < first + n; ++i) s += double(v[i]) * v[i];
    return std::sqrt(s);
}

std::vector<float> download(const gpu::Buffer& b) {
    std::vector<float> v(b.size() / 4);
    b.download(v.data(), v.size() * 4);
    return v;
}

// The checks every recurrent layer's probes pass: one entry per layer and head in order, every
// position, finite positive norms, decays in (0, 1).
void expect_traces(const ProbeResults& r, const model::ModelSpec& spec, int n_tokens, const char* kind) {
    size_t i = 0;
    for (int l = 0; l < spec.n_layer; ++l) {
        const model::LayerSpec& L = spec.layers[size_t(l)];
        const int heads = L.mixer == model::LayerMixer::Rwkv7    ? int(L.rwkv.n_head())
                          : L.mixer == model::LayerMixer::Mamba2 ? L.ssm.n_head
                          : L.mixer == model::LayerMixer::Mamba1 ? 1
                                                                 : 0;
        for (int h = 0; h < heads; ++h, ++i) {
            ASSERT_LT(i, r.state.size());
            const StateProbe& p = r.state[i];
            EXPECT_EQ(p.layer, l);
            EXPECT_EQ(p.head, h);
            EXPECT_EQ(p.kind, kind);
            ASSERT_EQ(p.positions.size(), size_t(n_tokens));
            ASSERT_EQ(p.norm.size(), size_t(n_tokens));
            ASSERT_EQ(p.decay.size(), size_t(n_tokens));
            for (int t = 0; t < n_tokens; ++t) {
                EXPECT_EQ(p.positions[size_t(t)], t);
                EXPECT_TRUE(std::isfinite(p.norm[size_t(t)]) && p.norm[size_t(t)] > 0) << l << ":" << h << " " << t;
                EXPECT_GT(p.decay[size_t(t)], 0.0f);
                EXPECT_LT(p.decay[size_t(t)], 1.0f);
            }
        }
    }
    EXPECT_EQ(i, r.state.size());
}

TEST(StateProbe, Rwkv7NormsMatchTheSessionsStateAndLeaveTheLogitsAlone) {
    const uint64_t errors_before = gpu::validation_error_count();
    auto m = load("rwkv7", "rwkv7");
    const auto& in = m->internals();
    const model::ModelSpec& spec = in.spec();
    const std::vector<int32_t> ids = tokens("rwkv7", "rwkv7", 23);
    ProbeConfig p;
    p.state = true;
    ProbeResults r;
    model::Forward f(in.context(), spec, in.weights(), 64, /*n_batch=*/8);
    const std::vector<float> logits = run(f, ids, 8, p, &r, spec.n_vocab);
    expect_traces(r, spec, int(ids.size()), "wkv7");
    // The last token's norm is the norm of the state the layer left.
    for (const StateProbe& sp : r.state) {
        const model::RwkvSpec& R = spec.layers[size_t(sp.layer)].rwkv;
        const std::vector<float> st = download(f.recurrent_state().rwkv().layer(sp.layer).wkv);
        const size_t n = size_t(R.head_size * R.head_size);
        EXPECT_NEAR(sp.norm.back(), frobenius(st, size_t(sp.head) * n, n), 1e-4 * sp.norm.back())
            << sp.layer << ":" << sp.head;
    }
    // One layer asked alone; the same values.
    ProbeConfig one;
    one.state_layers = {1};
    ProbeResults r1;
    model::Forward g(in.context(), spec, in.weights(), 64, /*n_batch=*/32);
    run(g, ids, 32, one, &r1, spec.n_vocab);
    ASSERT_EQ(r1.state.size(), 2u);
    for (int h = 0; h < 2; ++h)
        for (size_t t = 0; t < ids.size(); ++t) {
            EXPECT_NEAR(r1.state[size_t(h)].norm[t], r.state[size_t(2 + h)].norm[t], 1e-4 * r.state[size_t(2 + h)].norm[t]);
            EXPECT_NEAR(r1.state[size_t(h)].decay[t], r.state[size_t(2 + h)].decay[t], 1e-6);
        }
    // Without probes the logits are the same.
    model::Forward plain(in.context(), spec, in.weights(), 64, 8);
    EXPECT_EQ(run(plain, ids, 8, ProbeConfig{}, nullptr, spec.n_vocab), logits);
    // RWKV-7 has no mixing map (its decay is per channel); a layer outside the model is refused.
    ProbeConfig bad;
    bad.state_maps = {{0, 0}};
    EXPECT_THROW(run(plain, ids, 8, bad, &r, spec.n_vocab), std::invalid_argument);
    bad = ProbeConfig{};
    bad.state_layers = {3};
    EXPECT_THROW(run(plain, ids, 8, bad, &r, spec.n_vocab), std::invalid_argument);
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

// The [n_query][n_key] values of a map, checked causal.
void expect_causal(const AttentionMap& m) {
    for (int q = 0; q < m.n_query(); ++q)
        for (int k = 0; k < m.n_key(); ++k)
            if (m.key_pos[size_t(k)] > m.query_pos[size_t(q)]) {
                EXPECT_EQ(m.at(0, q, k), 0.0f) << q << " " << k;
            }
}
double max_abs(const std::vector<float>& v) {
    double m = 0;
    for (float x : v) m = std::max(m, double(std::fabs(x)));
    return m;
}

TEST(StateProbe, Mamba2NormsAndMixingMapsOverPassesAndEvals) {
    const uint64_t errors_before = gpu::validation_error_count();
    auto m = load("ssm", "mamba2");
    const auto& in = m->internals();
    const model::ModelSpec& spec = in.spec();
    const int last = spec.n_layer - 1, n_head = spec.layers[size_t(last)].ssm.n_head;
    ASSERT_EQ(spec.layers[0].mixer, model::LayerMixer::Mamba2);
    const std::vector<int32_t> ids = tokens("ssm", "mamba2", 21);
    const std::vector<int32_t> prompt(ids.begin(), ids.end() - 1);
    ProbeConfig p;
    p.state = true;
    AttentionHead tile{0, 1};
    tile.query_first = 5, tile.query_count = 6, tile.key_first = 2, tile.key_count = 7;
    p.state_maps = {{0, 1}, {last, n_head - 1}, tile};
    ProbeResults r;
    model::Forward f(in.context(), spec, in.weights(), 64, /*n_batch=*/8);
    run(f, prompt, 8, p, &r, spec.n_vocab);  // three passes
    expect_traces(r, spec, int(prompt.size()), "ssd");
    for (const StateProbe& sp : r.state) {
        const model::SsmSpec& S = spec.layers[size_t(sp.layer)].ssm;
        const std::vector<float> st = download(f.recurrent_state().layer(sp.layer).ssm);
        const size_t n = size_t(S.head_dim()) * size_t(S.d_state);
        EXPECT_NEAR(sp.norm.back(), frobenius(st, size_t(sp.head) * n, n), 1e-4 * sp.norm.back())
            << sp.layer << ":" << sp.head;
    }

    // The maps in one pass of the prompt and the next token (the reference for both evals).
    ProbeResults one;
    model::Forward g(in.context(), spec, in.weights(), 64, /*n_batch=*/32);
    run(g, ids, 32, p, &one, spec.n_vocab);
    ASSERT_EQ(r.state_maps.size(), 3u);
    ASSERT_EQ(one.state_maps.size(), 3u);
    const int n = int(prompt.size());
    for (size_t i = 0; i < 2; ++i) {
        const AttentionMap& a = r.state_maps[i];
        const AttentionMap& b = one.state_maps[i];
        EXPECT_EQ(a.kind, MapKind::StateMixing);
        EXPECT_EQ(a.layer, p.state_maps[i].layer);
        EXPECT_EQ(a.head, p.state_maps[i].head);
        ASSERT_EQ(a.n_query(), n);
        ASSERT_EQ(a.n_key(), n);
        ASSERT_EQ(b.n_query(), n + 1);
        expect_causal(a);
        const double scale = std::max(max_abs(b.probs), 1e-6);
        EXPECT_GT(max_abs(a.probs), 0.0);
        for (int q = 0; q < n; ++q)
            for (int k = 0; k < n; ++k)
                EXPECT_NEAR(a.at(0, q, k), b.at(0, q, k), 1e-4 * scale) << i << ": " << q << " " << k;
    }
    // The tile: query positions 5..10, keys 2..8, cut from the first map.
    const AttentionMap& t = r.state_maps[2];
    ASSERT_EQ(t.n_query(), 6);
    ASSERT_EQ(t.n_key(), 7);
    for (int q = 0; q < 6; ++q)
        for (int k = 0; k < 7; ++k) EXPECT_EQ(t.at(0, q, k), r.state_maps[0].at(0, 5 + q, 2 + k));

    // The next token as an eval of its own: one row over every key the state has seen.
    ProbeResults step;
    std::vector<float> logits(static_cast<size_t>(spec.n_vocab));
    f.step(&ids.back(), 1, n, false, logits.data(), p, &step, true);
    const AttentionMap& a = step.state_maps[0];
    ASSERT_EQ(a.n_query(), 1);
    EXPECT_EQ(a.query_pos[0], n);
    ASSERT_EQ(a.n_key(), n + 1);
    const double scale = std::max(max_abs(one.state_maps[0].probs), 1e-6);
    for (int k = 0; k <= n; ++k) EXPECT_NEAR(a.at(0, 0, k), one.state_maps[0].at(0, n, k), 1e-4 * scale) << k;
    ASSERT_EQ(step.state.size(), r.state.size());
    EXPECT_EQ(step.state[0].positions, std::vector<int>{n});

    // Over the budget, or a head outside the layer: refused by name.
    ProbeConfig big = p;
    big.state_map_positions = 1 << 14;
    big.max_bytes = 1 << 20;
    EXPECT_THROW(run(g, ids, 32, big, &one, spec.n_vocab), std::invalid_argument);
    ProbeConfig bad;
    bad.state_maps = {{0, n_head}};
    EXPECT_THROW(run(g, ids, 32, bad, &one, spec.n_vocab), std::invalid_argument);
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

TEST(StateProbe, JambaMamba1LayersBesideAttention) {
    const uint64_t errors_before = gpu::validation_error_count();
    auto m = load("ssm", "jamba");
    const auto& in = m->internals();
    const model::ModelSpec& spec = in.spec();
    const std::vector<int32_t> ids = tokens("ssm", "jamba", 12);
    ProbeConfig p;
    p.state = true;
    ProbeResults r;
    model::Forward f(in.context(), spec, in.weights(), 32, /*n_batch=*/8);
    run(f, ids, 8, p, &r, spec.n_vocab);
    expect_traces(r, spec, int(ids.size()), "selective_scan");
    ASSERT_FALSE(r.state.empty());
    for (const StateProbe& sp : r.state) {
        const std::vector<float> st = download(f.recurrent_state().layer(sp.layer).ssm);
        const model::SsmSpec& S = spec.layers[size_t(sp.layer)].ssm;
        EXPECT_NEAR(sp.norm.back(), frobenius(st, 0, size_t(S.d_inner) * size_t(S.d_state)), 1e-4 * sp.norm.back());
    }
    // An attention layer has no state; a Mamba-1 layer no mixing map (its decay is per channel).
    int attention = -1;
    for (int l = 0; l < spec.n_layer && attention < 0; ++l)
        if (spec.layers[size_t(l)].mixer == model::LayerMixer::Attention) attention = l;
    ASSERT_GE(attention, 0);
    ProbeConfig bad;
    bad.state_layers = {attention};
    EXPECT_THROW(run(f, ids, 8, bad, &r, spec.n_vocab), std::invalid_argument);
    bad = ProbeConfig{};
    bad.state_maps = {{r.state[0].layer, 0}};
    EXPECT_THROW(run(f, ids, 8, bad, &r, spec.n_vocab), std::invalid_argument);
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

}  // namespace
}  // namespace vkllm
