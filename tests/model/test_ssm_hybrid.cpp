// Hybrid state-space families through the session: each layer's mixer and FFN as the file's
// per-layer arrays say (granitehybrid: Mamba-2 where head_count_kv is 0, attention elsewhere, an
// FFN after both; nemotron_h: one part per layer), the KV cache holding rows only for the
// attention layers and the recurrent state only for the state-space ones, and the hybrid golden
// models of tests/golden/ssm (granitehybrid, jamba, nemotron_h with its FFN-only layers and
// relu-squared MLP, granitehybrid-multipliers with Granite's residual and logit multipliers,
// granitehybrid-moe-multipliers with them on routed and shared experts)
// against llama.cpp: logits of every prompt position at two batch sizes (the smaller carrying the
// KV cache and the recurrent state over 30 passes), 32 greedy tokens, one-token decode over two replay buckets, and truncation (re-evaluated from
// position 0 because of the state) continuing as llama.cpp does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf.h"
#include "gpu/device.h"
#include "greedy.h"
#include "model/forward.h"
#include "param_names.h"
#include "ssm_golden.h"
#include "vkllm/model_info.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

using model::LayerMixer;
using test::load_ssm_golden;
using test::max_diff;

// Where matmuls read activations rounded to 8 bits, a value an ulp from a rounding boundary can
// round the other way (the SSM kernels sum in their own fixed order: test_ssm_mamba2.cpp), which
// moves the logits by up to this much ...
constexpr double kRoundingCrossingBound = 0.05;
// ... except where the crossing changes which experts a router picks: then one position's
// output swaps an expert for another of nearly the same weight. granitehybrid-moe-q8_0: position
// 5 only moves by 0.23 (the F32 model of the same seed and options matches llama.cpp to 3.4e-6
// at every position, so the rest of the graph is exact); the greedy text is unchanged.
constexpr double kRoutingFlipBound = 0.5;
constexpr int kRoutingFlips = 1;

// Positions whose largest logit difference exceeds `bound`, and the largest difference overall.
std::pair<int, double> positions_over(const test::SsmGolden& g, const std::vector<float>& logits, double bound) {
    int over = 0;
    double worst = 0;
    for (size_t p = 0; p < g.tokens.size(); ++p) {
        const double d = max_diff(g, std::vector<float>(logits.begin() + long(p * size_t(g.n_vocab)),
                                                        logits.begin() + long((p + 1) * size_t(g.n_vocab))),
                                  p, 1);
        over += d > bound;
        worst = std::max(worst, d);
    }
    return {over, worst};
}

// llama.cpp's golden logits come from its exact mode: an F32 KV cache.
SessionOptions exact(int n_batch) {
    SessionOptions so;
    so.n_batch = n_batch;
    so.kv_cache = KvCacheType::F32;
    return so;
}

class HybridGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(HybridGolden, LogitsAndGreedyTextMatchLlamaCpp) {
    const uint64_t errors_before = gpu::validation_error_count();
    test::SsmGolden g = load_ssm_golden(GetParam());
    const bool q = test::quantised(*g.model);
    const bool moe = g.model->internals().spec().layers[0].ffn.moe.n_expert > 0;
    for (int n_batch : {256, 4}) {
        SCOPED_TRACE("batch " + std::to_string(n_batch));
        Session s(*g.model, exact(n_batch));
        std::vector<float> logits = s.eval(g.tokens, /*all_logits=*/true);
        ASSERT_EQ(logits.size(), g.logits.size());
        const auto [over, worst] = positions_over(g, logits, q ? kRoundingCrossingBound : 1e-3);
        std::printf("%s, batch %d: largest logit difference from llama.cpp %.3g\n", GetParam().c_str(), n_batch, worst);
        EXPECT_LE(over, q && moe ? kRoutingFlips : 0) << "largest difference " << worst;
        EXPECT_LE(worst, q && moe ? kRoutingFlipBound : q ? kRoundingCrossingBound : 1e-3);
        ASSERT_EQ(g.greedy.size(), 32u);
        EXPECT_EQ(test::greedy_continuation(s, std::vector<float>(logits.end() - g.n_vocab, logits.end()),
                                            g.greedy.size()),
                  g.greedy);
    }
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

INSTANTIATE_TEST_SUITE_P(Golden, HybridGolden,
                         ::testing::Values("granitehybrid", "granitehybrid-moe-q8_0", "granitehybrid-multipliers",
                                           "granitehybrid-moe-multipliers", "jamba", "nemotron_h"),
                         test::ModelParamName());

TEST(Hybrid, DecodeOneTokenAtATimeAndTruncateMatchLlamaCpp) {
    const uint64_t errors_before = gpu::validation_error_count();
    test::SsmGolden g = load_ssm_golden("granitehybrid");
    Session s(*g.model, exact(8));
    // A prompt of 9 (two passes), then one token per eval: 109 decode steps over two replay buckets.
    std::vector<float> first = s.eval(std::vector<int32_t>(g.tokens.begin(), g.tokens.begin() + 9), true);
    double worst = max_diff(g, first, 0, 9);
    for (size_t p = 9; p < g.tokens.size(); ++p) worst = std::max(worst, max_diff(g, s.eval({g.tokens[p]}), p, 1));
    EXPECT_LT(worst, 1e-3);
    // Back to 50 tokens and on again: the attention layers' cache could forget, the state cannot,
    // so the kept tokens are evaluated anew from position 0 and both continue as a fresh session.
    const size_t n = g.tokens.size();
    s.truncate(50);
    EXPECT_EQ(s.n_past(), 50);
    std::vector<float> rest = s.eval(std::vector<int32_t>(g.tokens.begin() + 50, g.tokens.end()), true);
    EXPECT_LT(max_diff(g, rest, 50, n - 50), 1e-3);
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

// Layer l's parts: its mixer and whether an FFN follows.
struct Parts {
    LayerMixer mixer;
    bool ffn;
};

void expect_layers(const model::ModelSpec& spec, const std::vector<Parts>& parts) {
    ASSERT_EQ(spec.layers.size(), parts.size());
    for (size_t l = 0; l < parts.size(); ++l) {
        SCOPED_TRACE("layer " + std::to_string(l));
        const model::LayerSpec& L = spec.layers[l];
        EXPECT_EQ(L.mixer, parts[l].mixer);
        EXPECT_EQ(L.has_ffn, parts[l].ffn);
        EXPECT_EQ(L.ssm.enabled(), L.mixer == LayerMixer::Mamba2 || L.mixer == LayerMixer::Mamba1);
        EXPECT_EQ(L.attn.n_head_kv > 0, L.mixer == LayerMixer::Attention);
    }
}

TEST(Hybrid, GraniteLayersAndMemoryAreWhatTheFileSays) {
    test::SsmGolden g = load_ssm_golden("granitehybrid");
    const auto& in = g.model->internals();
    const model::ModelSpec& spec = in.spec();
    // --layers M*M*: head_count_kv [0, 2, 0, 2]; an FFN (SwiGLU, 64 wide) after every mixer.
    expect_layers(spec, {{LayerMixer::Mamba2, true}, {LayerMixer::Attention, true}, {LayerMixer::Mamba2, true},
                         {LayerMixer::Attention, true}});
    for (const model::LayerSpec& L : spec.layers) EXPECT_EQ(L.ffn.n_ff, 64);
    // Granite's multipliers: embeddings times 12, the attention's kq scale 0.0625; RoPE on pairs.
    EXPECT_FLOAT_EQ(spec.embd_scale, 12.0f);
    EXPECT_FLOAT_EQ(spec.layers[1].attn.scale, 0.0625f);
    EXPECT_TRUE(spec.layers[1].attn.rope.enabled);
    EXPECT_FALSE(spec.layers[1].attn.rope.neox);
    // Two attention layers of 2 kv heads of 16 (keys and values, f32); two state-space layers of
    // conv [128 + 2*2*16 channels][3 taps kept] and SSM [8 heads][16][16 states].
    EXPECT_EQ(spec.kv_bytes_per_token(), uint64_t(2 * 2 * (16 + 16) * 4));
    const uint64_t state_per_layer = (uint64_t(192) * 3 + uint64_t(128) * 16) * 4;
    EXPECT_EQ(spec.recurrent_state_bytes(), 2 * state_per_layer);
    for (int n_ctx : {256, 1024}) {
        model::Forward f(in.context(), spec, in.weights(), n_ctx, /*n_batch=*/8, true, KvCacheType::F32);
        EXPECT_EQ(f.kv_bytes(), uint64_t(n_ctx) * spec.kv_bytes_per_token()) << n_ctx;
        EXPECT_EQ(f.recurrent_bytes(), 2 * state_per_layer) << n_ctx;
        EXPECT_EQ(f.kv_usage().global_layers, 2) << n_ctx;
    }
}

TEST(Hybrid, GraniteMultipliersAreReadFromTheFile) {
    // residual_scale 0.22 and logit_scale 6 (Granite 4.0-H's values); against the same weights
    // without them llama.cpp's logits differ by up to 0.67 beyond the division by 6.
    test::SsmGolden g = load_ssm_golden("granitehybrid-multipliers");
    const model::ModelSpec& spec = g.model->internals().spec();
    EXPECT_FLOAT_EQ(spec.residual_scale, 0.22f);
    EXPECT_FLOAT_EQ(spec.logit_scale, 6.0f);
    EXPECT_FLOAT_EQ(spec.embd_scale, 12.0f);
    // The other golden models have none.
    EXPECT_FLOAT_EQ(load_ssm_golden("granitehybrid").model->internals().spec().residual_scale, 1.0f);
}

// The MoE golden carries the multipliers too: llama.cpp scales the routed experts' sum plus the
// shared expert's output by residual_scale before the residual add.
TEST(Hybrid, GraniteMoeMultipliersGoldenHasExpertsAndMultipliers) {
    test::SsmGolden g = load_ssm_golden("granitehybrid-moe-multipliers");
    const model::ModelSpec& spec = g.model->internals().spec();
    EXPECT_FLOAT_EQ(spec.residual_scale, 0.22f);
    EXPECT_FLOAT_EQ(spec.logit_scale, 6.0f);
    EXPECT_FALSE(test::quantised(*g.model));
    for (const model::LayerSpec& L : spec.layers) {
        EXPECT_EQ(L.ffn.moe.n_expert, 4);
        EXPECT_EQ(L.ffn.moe.top_k, 2);
        EXPECT_EQ(L.ffn.moe.n_ff_shared, 64);
    }
}

// The logit lens of the last layer is the model's own next-token distribution, so it divides by
// Granite's logit multiplier as the output head does (undivided, its logits are 6 times as large
// and its probabilities far sharper).
TEST(Hybrid, GraniteLastLayerLogitLensIsTheOutputDistribution) {
    const uint64_t errors_before = gpu::validation_error_count();
    test::SsmGolden g = load_ssm_golden("granitehybrid-moe-multipliers");
    const int L = g.model->internals().spec().n_layer;
    SessionOptions so = exact(16);
    so.probes.logit_lens_layers = {0, L - 1};
    so.probes.logit_lens_top_n = 8;
    Session s(*g.model, so);
    const std::vector<float> logits = s.eval(g.tokens);
    ASSERT_EQ(logits.size(), size_t(g.n_vocab));
    const auto& lenses = s.probes().logit_lens;
    const auto last = std::find_if(lenses.begin(), lenses.end(), [&](const LogitLens& l) { return l.layer == L - 1; });
    ASSERT_NE(last, lenses.end());
    ASSERT_EQ(last->top.size(), 8u);
    // softmax of the session's logits
    const float mx = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (float v : logits) sum += std::exp(double(v) - mx);
    for (const LensToken& t : last->top)
        EXPECT_NEAR(t.p, std::exp(double(logits[size_t(t.id)]) - mx) / sum, 1e-5) << "token " << t.id;
    EXPECT_EQ(last->top[0].id, std::max_element(logits.begin(), logits.end()) - logits.begin());
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

TEST(Hybrid, GraniteMoeLayersHaveRoutedAndSharedExperts) {
    test::SsmGolden g = load_ssm_golden("granitehybrid-moe-q8_0");
    const model::ModelSpec& spec = g.model->internals().spec();
    expect_layers(spec, {{LayerMixer::Attention, true}, {LayerMixer::Mamba2, true}, {LayerMixer::Mamba2, true}});
    for (const model::LayerSpec& L : spec.layers) {
        EXPECT_EQ(L.ffn.moe.n_expert, 4);
        EXPECT_EQ(L.ffn.moe.top_k, 2);
        EXPECT_EQ(L.ffn.moe.n_ff_expert, 64);
        EXPECT_EQ(L.ffn.moe.n_ff_shared, 64);  // expert_shared_feed_forward_length
        EXPECT_TRUE(L.ffn.moe.norm_topk);
        EXPECT_FALSE(L.ffn.moe.sigmoid);
    }
}

TEST(Hybrid, JambaHasMamba1WithNormsAttentionAndExpertsWhereRouted) {
    test::SsmGolden g = load_ssm_golden("jamba");
    const model::ModelSpec& spec = g.model->internals().spec();
    // --layers M*MM: head_count_kv [0, 2, 0, 0]; routers (ffn_gate_inp) on layers 1 and 3 only.
    expect_layers(spec, {{LayerMixer::Mamba1, true}, {LayerMixer::Attention, true}, {LayerMixer::Mamba1, true},
                         {LayerMixer::Mamba1, true}});
    for (size_t l = 0; l < 4; ++l) {
        EXPECT_EQ(spec.layers[l].ffn.moe.n_expert, l % 2 ? 4 : 0) << l;
        EXPECT_FALSE(spec.layers[l].ffn.moe.norm_topk) << l;
        if (spec.layers[l].ssm.enabled()) {
            EXPECT_TRUE(spec.layers[l].ssm.dt_b_c_norm) << l;
        }
    }
    EXPECT_FALSE(spec.layers[1].attn.rope.enabled);
    EXPECT_EQ(spec.kv_bytes_per_token(), uint64_t(2 * (16 + 16) * 4));
    // Mamba-1: conv [128 channels][3 taps kept] and SSM [128][16 states], f32, three layers.
    EXPECT_EQ(spec.recurrent_state_bytes(), 3 * (uint64_t(128) * 3 + uint64_t(128) * 16) * 4);
}

TEST(Hybrid, NemotronHasOnePartPerLayer) {
    test::SsmGolden g = load_ssm_golden("nemotron_h");
    const model::ModelSpec& spec = g.model->internals().spec();
    // --layers M-*M-: head_count_kv [0, 0, 2, 0, 0], feed_forward_length [0, 160, 0, 0, 160].
    expect_layers(spec, {{LayerMixer::Mamba2, false}, {LayerMixer::None, true}, {LayerMixer::Attention, false},
                         {LayerMixer::Mamba2, false}, {LayerMixer::None, true}});
    for (int l : {1, 4}) {
        const model::FfnSpec& f = spec.layers[size_t(l)].ffn;
        EXPECT_EQ(f.n_ff, 160);
        EXPECT_EQ(f.activation, model::Activation::ReluSqr);
        EXPECT_FALSE(f.gated);
        EXPECT_EQ(spec.layers[size_t(l)].ffn_norm_tensor, "attn_norm");  // every layer's norm
    }
    const model::AttentionSpec& a = spec.layers[2].attn;
    EXPECT_FALSE(a.rope.enabled);  // no positions at all
    EXPECT_FLOAT_EQ(a.scale, 0.25f);  // 1/sqrt(head_dim 16)
    EXPECT_EQ(spec.kv_bytes_per_token(), uint64_t(2 * (16 + 16) * 4));
    EXPECT_EQ(spec.recurrent_state_bytes(), 2 * (uint64_t(192) * 3 + uint64_t(128) * 16) * 4);
    // What `vkllm inspect` prints: the state per sequence beside the KV bytes per token.
    const ModelInfo info = g.model->info();
    EXPECT_EQ(info.state_bytes_per_sequence, spec.recurrent_state_bytes());
    EXPECT_EQ(info.n_ssm_layers, 2);
    EXPECT_EQ(info.layers[1].mixer, MixerKind::None);
    EXPECT_EQ(info.layers[2].ffn.kind, FfnKind::None);
    EXPECT_NE(info.layer_table().find("KV cache 256 bytes per token (1 attention layers), recurrent state 20992 bytes "
                                      "per sequence (2 state-space layers)"),
              std::string::npos)
        << info.layer_table();
}

}  // namespace
}  // namespace vkllm
