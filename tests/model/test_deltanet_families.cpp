// The Gated DeltaNet families against llama.cpp: tests/golden/deltanet's random-weight models
// (qwen35: Gated DeltaNet layers with every N-th layer gated attention, key heads tiled over the
// value heads, partial RoPE; qwen35-q8_0: Q8_0 matrices, one key head over two value heads of 32,
// a 3-tap convolution; qwen3next: each key head repeated for its value heads, b and alpha from one
// ssm_ba per key head, experts and a gated shared expert; qwen35moe: Qwen3.5's layers with them). Through the session: the logits of every prompt position (249 tokens,
// longer than any chunk) and 32 greedy tokens, at batch 256 and at batch 5 (the conv and
// delta-rule states and the KV cache carried over 50 passes); the CPU reference forward; each
// file's layer parts and blocks; the goldens rebuilt from models.txt.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "greedy.h"
#include "gguf/gguf.h"
#include "model/blocks/layer_blocks.h"
#include "model/model_internal.h"
#include "param_names.h"
#include "random_golden_models.h"
#include "random_model/random_model.h"
#include "reference/reference_forward.h"
#include "test_support.h"
#include "vkllm/model.h"
#include "vkllm/model_info.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

using model::BlockKind;
using model::LayerMixer;

struct Golden {
    std::unique_ptr<Model> model;
    std::vector<int32_t> tokens, greedy;
    std::vector<float> logits;  // llama.cpp's [tokens][n_vocab]
    int n_vocab = 0;
};

Golden load(const std::string& name) {
    const std::string base = test::source_dir() + "/tests/golden/deltanet/" + name;
    Golden g;
    g.model = Model::load(base + ".gguf");
    g.tokens = test::read_ids(base + ".tokens.txt");
    g.logits = test::read_f32(base + ".logits.f32");
    g.greedy = test::read_ids(base + ".greedy.txt");
    g.n_vocab = g.model->internals().spec().n_vocab;
    return g;
}

double max_diff(const Golden& g, const std::vector<float>& logits) {
    double m = 0;
    for (size_t i = 0; i < logits.size(); ++i) m = std::max(m, double(std::fabs(logits[i] - g.logits[i])));
    return m;
}

// llama.cpp's golden logits come from its exact mode: an F32 KV cache.
SessionOptions exact(int n_batch) {
    SessionOptions so;
    so.n_batch = n_batch;
    so.kv_cache = KvCacheType::F32;
    return so;
}

class DeltaNetGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(DeltaNetGolden, LogitsAndGreedyTextMatchLlamaCpp) {
    const uint64_t errors_before = gpu::validation_error_count();
    Golden g = load(GetParam());
    // Q8_0: the matmuls read activations rounded to 8 bits, where a value an ulp from a rounding
    // boundary may round the other way than in llama.cpp's build (whose sums run in another
    // order). qwen35-q8_0: positions 0-65 within 1.2e-6, then one crossing at 66 that the
    // delta-rule state carries on, moving later positions by up to 0.073 (most by 0.02-0.05, some
    // not at all where the next rounding absorbs it); the greedy text is unchanged.
    const double bound = GetParam() == "qwen35-q8_0" ? 0.1 : 1e-3;
    for (int n_batch : {256, 5}) {
        SCOPED_TRACE("batch " + std::to_string(n_batch));
        Session s(*g.model, exact(n_batch));
        const std::vector<float> logits = s.eval(g.tokens, /*all_logits=*/true);
        ASSERT_EQ(logits.size(), g.logits.size());
        const double worst = max_diff(g, logits);
        std::printf("%s, batch %d: largest logit difference from llama.cpp %.3g\n", GetParam().c_str(), n_batch, worst);
        EXPECT_LT(worst, bound);
        ASSERT_EQ(g.greedy.size(), 32u);
        EXPECT_EQ(test::greedy_continuation(s, std::vector<float>(logits.end() - g.n_vocab, logits.end()),
                                            g.greedy.size()),
                  g.greedy);
    }
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

INSTANTIATE_TEST_SUITE_P(Golden, DeltaNetGolden, ::testing::Values("qwen35", "qwen35-q8_0", "qwen3next", "qwen35moe"),
                         test::ModelParamName());

// The CPU reference walks Gated DeltaNet mixers, gated attention and gated shared experts too,
// carrying the conv and delta-rule states from eval to eval: it matches llama.cpp as the GPU does.
class DeltaNetReference : public ::testing::TestWithParam<std::string> {};

TEST_P(DeltaNetReference, MatchesLlamaCpp) {
    Golden g = load(GetParam());
    const auto& in = g.model->internals();
    model::ReferenceForward ref(in.file(), in.spec(), 512);
    const std::vector<int32_t> first(g.tokens.begin(), g.tokens.begin() + 40), rest(g.tokens.begin() + 40, g.tokens.end());
    std::vector<float> logits = ref.eval(first);
    const std::vector<float> more = ref.eval(rest);
    logits.insert(logits.end(), more.begin(), more.end());
    const double worst = max_diff(g, logits);
    std::printf("%s: the CPU reference's largest logit difference from llama.cpp %.3g\n", GetParam().c_str(), worst);
    EXPECT_LT(worst, 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Golden, DeltaNetReference, ::testing::Values("qwen35", "qwen3next"));

// qwen35's layers as its file says (full_attention_interval 4): three Gated DeltaNet layers,
// then gated attention; an FFN after each, normalised by post_attention_norm; the state per
// sequence is the DeltaNet layers' conv and delta-rule states, the KV cache the one attention layer's.
TEST(DeltaNetFamilies, LayerPartsAndBlocks) {
    Golden g = load("qwen35");
    const model::ModelSpec& spec = g.model->internals().spec();
    ASSERT_EQ(spec.n_layer, 4);
    for (int l = 0; l < 4; ++l) {
        SCOPED_TRACE(l);
        const model::LayerSpec& L = spec.layers[size_t(l)];
        EXPECT_EQ(L.mixer, l == 3 ? LayerMixer::Attention : LayerMixer::GatedDeltaNet);
        EXPECT_EQ(L.ffn_norm_tensor, "post_attention_norm");
        EXPECT_EQ(model::layer_block_kinds(L),
                  (std::vector<BlockKind>{l == 3 ? BlockKind::Attention : BlockKind::GatedDeltaNet, BlockKind::DenseFfn}));
    }
    const model::AttentionSpec& a = spec.layers[3].attn;
    EXPECT_TRUE(a.gated);
    EXPECT_EQ(a.qk_norm, model::QkNorm::PerHead);
    EXPECT_TRUE(a.rope.neox);
    EXPECT_EQ(a.rope.n_dims, 8);
    const model::SsmSpec& d = spec.layers[0].ssm;
    EXPECT_TRUE(d.delta_net);
    EXPECT_EQ(d.delta_share, DeltaHeadShare::Tiled);
    EXPECT_EQ(d.n_group, 2);
    EXPECT_EQ(d.n_head, 8);
    EXPECT_EQ(d.d_state, 16);
    // Per DeltaNet layer: conv state (q | k | v = 192 channels) x 3 taps, state 8 heads x 16 x 16.
    const uint64_t per_layer = (192u * 3u + 8u * 16u * 16u) * 4u;
    EXPECT_EQ(spec.recurrent_state_bytes(), 3 * per_layer);
    const ModelInfo info = g.model->info();
    EXPECT_EQ(info.layers[0].mixer, MixerKind::GatedDeltaNet);
    EXPECT_STREQ(to_string(MixerKind::GatedDeltaNet), "gated-deltanet");
    EXPECT_TRUE(info.layers[3].attention.gated);
    EXPECT_EQ(info.state_bytes_per_sequence, 3 * per_layer);

    // qwen3next (D*D): key heads repeated, b | alpha grouped per key head, experts then the gated
    // shared expert after each mixer.
    Golden n = load("qwen3next");
    const model::ModelSpec& ns = n.model->internals().spec();
    ASSERT_EQ(ns.n_layer, 3);
    EXPECT_EQ(ns.layers[0].ssm.delta_share, DeltaHeadShare::Interleaved);
    EXPECT_TRUE(ns.layers[0].ssm.delta_ba_grouped);
    EXPECT_EQ(ns.layers[1].mixer, LayerMixer::Attention);
    EXPECT_EQ(ns.layers[0].ffn.moe.n_ff_shared, 0);
    EXPECT_EQ(ns.layers[0].ffn.moe.n_ff_shared_gated, 32);
    EXPECT_EQ(model::layer_block_kinds(ns.layers[0]),
              (std::vector<BlockKind>{BlockKind::GatedDeltaNet, BlockKind::MoeFfn, BlockKind::GatedSharedExpert}));
    EXPECT_TRUE(n.model->info().layers[0].ffn.shared_expert_gated);
}

// The golden models are what vkllm-random-model writes from models.txt, byte for byte.
TEST(DeltaNetFamilies, GoldenModelsAreReproducible) {
    VKLLM_REQUIRE_SHARED(shared);
    auto vocab = gguf::File::open(shared + "/models/stories260K/stories260K-F32.gguf");
    test::expect_random_golden_models_reproducible(test::source_dir() + "/tests/golden/deltanet", *vocab, 4);
}

}  // namespace
}  // namespace vkllm
