// Two hybrids whose layers differ from Granite's and Jamba's: LFM2 (a gated short convolution
// where a layer's head_count_kv is 0, attention with per-head QK-norms elsewhere, a SwiGLU FFN
// after either) and Falcon-H1 (attention and a Mamba-2 mixer side by side in every layer, both
// reading the normalised layer input, then an FFN). Their golden models of tests/golden/ssm
// against llama.cpp through the session: logits of every prompt position at batches 256 and 4
// (the smaller carrying the conv and SSM states and the KV cache over 30 passes), 32 greedy
// tokens, truncation (re-evaluated from position 0); each file's layer parts, blocks and bytes.
// lfm2-window adds a sliding window (16) on its attention layer, whose ring-buffer cache wraps at
// batch 4, and a 4-tap convolution over 48 channels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "greedy.h"
#include "model/blocks/layer_blocks.h"
#include "model/forward.h"
#include "param_names.h"
#include "reference/reference_forward.h"
#include "ssm_golden.h"
#include "vkllm/model_info.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

using model::BlockKind;
using model::LayerMixer;
using test::load_ssm_golden;
using test::max_diff;

// llama.cpp's golden logits come from its exact mode: an F32 KV cache.
SessionOptions exact(int n_batch) {
    SessionOptions so;
    so.n_batch = n_batch;
    so.kv_cache = KvCacheType::F32;
    return so;
}

class ConvAndSideBySideGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ConvAndSideBySideGolden, LogitsAndGreedyTextMatchLlamaCpp) {
    const uint64_t errors_before = gpu::validation_error_count();
    test::SsmGolden g = load_ssm_golden(GetParam());
    for (int n_batch : {256, 4}) {
        SCOPED_TRACE("batch " + std::to_string(n_batch));
        Session s(*g.model, exact(n_batch));
        const std::vector<float> logits = s.eval(g.tokens, /*all_logits=*/true);
        ASSERT_EQ(logits.size(), g.logits.size());
        const double worst = max_diff(g, logits, 0, g.tokens.size());
        std::printf("%s, batch %d: largest logit difference from llama.cpp %.3g\n", GetParam().c_str(), n_batch, worst);
        EXPECT_LT(worst, 1e-3);
        ASSERT_EQ(g.greedy.size(), 32u);
        EXPECT_EQ(test::greedy_continuation(s, std::vector<float>(logits.end() - g.n_vocab, logits.end()),
                                            g.greedy.size()),
                  g.greedy);
    }
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

INSTANTIATE_TEST_SUITE_P(Golden, ConvAndSideBySideGolden, ::testing::Values("lfm2", "lfm2-window", "falcon-h1"),
                         test::ModelParamName());

// The state cannot forget: back to 50 tokens, the kept tokens are evaluated anew from position 0
// and the rest continues as llama.cpp's single pass did.
TEST(ConvAndSideBySide, TruncateAndContinueMatchesLlamaCpp) {
    const uint64_t errors_before = gpu::validation_error_count();
    for (const char* name : {"lfm2", "falcon-h1"}) {
        SCOPED_TRACE(name);
        test::SsmGolden g = load_ssm_golden(name);
        Session s(*g.model, exact(32));
        s.eval(std::vector<int32_t>(g.tokens.begin(), g.tokens.begin() + 70));
        s.truncate(50);
        EXPECT_EQ(s.n_past(), 50);
        const size_t n = g.tokens.size();
        const std::vector<float> rest = s.eval(std::vector<int32_t>(g.tokens.begin() + 50, g.tokens.end()), true);
        EXPECT_LT(max_diff(g, rest, 50, n - 50), 1e-3);
    }
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

// The CPU reference walks LFM2's short convolutions and Mamba-2 mixers (alone, as mamba2's and
// granitehybrid's, or beside attention, as Falcon-H1's) too, carrying their states from eval to
// eval: it matches llama.cpp as the GPU does.
TEST(ConvAndSideBySide, ReferenceForwardMatchesLlamaCpp) {
    for (const char* name : {"lfm2", "lfm2-window", "falcon-h1", "mamba2", "granitehybrid"}) {
        SCOPED_TRACE(name);
        test::SsmGolden g = load_ssm_golden(name);
        const auto& in = g.model->internals();
        model::ReferenceForward ref(in.file(), in.spec(), 256);
        const std::vector<int32_t> first(g.tokens.begin(), g.tokens.begin() + 40), rest(g.tokens.begin() + 40, g.tokens.end());
        const std::vector<float> a = ref.eval(first), b = ref.eval(rest);
        const double worst = std::max(max_diff(g, a, 0, first.size()), max_diff(g, b, first.size(), rest.size()));
        std::printf("%s: the CPU reference's largest logit difference from llama.cpp %.3g\n", name, worst);
        EXPECT_LT(worst, 1e-3);
    }
    // Mamba-1 it refuses, naming what it walks.
    test::SsmGolden m = load_ssm_golden("mamba");
    try {
        model::ReferenceForward ref(m.model->internals().file(), m.model->internals().spec(), 256);
        ADD_FAILURE() << "the reference forward took Mamba-1";
    } catch (const model::ModelError& e) {
        EXPECT_NE(std::string(e.what()).find("a layer without attention, a short convolution, a Mamba-2 or a Gated DeltaNet mixer"), std::string::npos) << e.what();
    }
}

TEST(ConvAndSideBySide, Lfm2LayersStateAndInfoAreWhatTheFileSays) {
    test::SsmGolden g = load_ssm_golden("lfm2");
    const auto& in = g.model->internals();
    const model::ModelSpec& spec = in.spec();
    // --layers CC*C: head_count_kv [0, 0, 2, 0]; a SwiGLU FFN (96) after every layer.
    ASSERT_EQ(spec.layers.size(), 4u);
    for (size_t l = 0; l < 4; ++l) {
        SCOPED_TRACE("layer " + std::to_string(l));
        const model::LayerSpec& L = spec.layers[l];
        EXPECT_EQ(L.mixer, l == 2 ? LayerMixer::Attention : LayerMixer::ShortConv);
        EXPECT_TRUE(L.has_ffn);
        EXPECT_EQ(L.ffn.n_ff, 96);
        EXPECT_FALSE(L.ssm.enabled());
        EXPECT_EQ(L.shortconv.enabled(), l != 2);
        if (l != 2) {
            EXPECT_EQ(L.shortconv.l_cache, 3);
            EXPECT_EQ(L.shortconv.channels, 64);
            EXPECT_EQ(model::layer_block_kinds(L), (std::vector<BlockKind>{BlockKind::ShortConv, BlockKind::DenseFfn}));
        }
    }
    const model::AttentionSpec& a = spec.layers[2].attn;
    EXPECT_EQ(a.qk_norm, model::QkNorm::PerHead);
    EXPECT_TRUE(a.rope.neox);
    EXPECT_EQ(a.n_head_kv, 2);
    EXPECT_EQ(spec.output_norm_tensor, "token_embd_norm");
    EXPECT_EQ(a.window, 0);  // no attention.sliding_window: global attention
    // lfm2-window: `attention.sliding_window` 16 windows the attention layer; 4 taps over 48 channels.
    test::SsmGolden w = load_ssm_golden("lfm2-window");
    EXPECT_EQ(w.model->internals().spec().layers[1].attn.window, 16);
    EXPECT_EQ(w.model->internals().spec().layers[0].shortconv.l_cache, 4);
    EXPECT_EQ(w.model->internals().spec().recurrent_state_bytes(), 2 * uint64_t(48) * 3 * 4);
    // One attention layer of 2 kv heads of 16 (keys and values, f32); three conv states of
    // [64 channels][2 taps kept].
    EXPECT_EQ(spec.kv_bytes_per_token(), uint64_t(2 * (16 + 16) * 4));
    const uint64_t conv_state = uint64_t(64) * 2 * 4;
    EXPECT_EQ(spec.recurrent_state_bytes(), 3 * conv_state);
    for (int n_ctx : {256, 1024}) {
        model::Forward f(in.context(), spec, in.weights(), n_ctx, /*n_batch=*/8, true, KvCacheType::F32);
        EXPECT_EQ(f.kv_bytes(), uint64_t(n_ctx) * spec.kv_bytes_per_token()) << n_ctx;
        EXPECT_EQ(f.recurrent_bytes(), 3 * conv_state) << n_ctx;
    }
    // What `vkllm inspect` prints: the short convolutions' state per sequence beside the KV bytes.
    const ModelInfo info = g.model->info();
    EXPECT_EQ(info.n_shortconv_layers, 3);
    EXPECT_EQ(info.n_ssm_layers, 0);
    EXPECT_EQ(info.state_bytes_per_sequence, 3 * conv_state);
    EXPECT_EQ(info.layers[0].mixer, MixerKind::ShortConv);
    EXPECT_EQ(info.layers[0].shortconv.l_cache, 3);
    EXPECT_EQ(info.layers[0].state_bytes, conv_state);
    EXPECT_STREQ(to_string(MixerKind::ShortConv), "short-conv");
    const std::string table = info.layer_table();
    EXPECT_NE(table.find("KV cache 256 bytes per token (1 attention layers), recurrent state 1536 bytes per "
                         "sequence (3 short-convolution layers)"),
              std::string::npos)
        << table;
    EXPECT_NE(table.find("short conv 3 taps x 64 channels, state 512 B"), std::string::npos) << table;
}

TEST(ConvAndSideBySide, FalconH1LayersHaveAttentionAndMamba2SideBySide) {
    test::SsmGolden g = load_ssm_golden("falcon-h1");
    const auto& in = g.model->internals();
    const model::ModelSpec& spec = in.spec();
    ASSERT_EQ(spec.layers.size(), 2u);
    for (const model::LayerSpec& L : spec.layers) {
        EXPECT_EQ(L.mixer, LayerMixer::Attention);
        EXPECT_TRUE(L.ssm_beside_attention);
        EXPECT_TRUE(L.has_ffn);
        EXPECT_TRUE(L.ffn_norm_unsuffixed);  // blk.N.ffn_norm, as llama.cpp names it
        EXPECT_FALSE(L.parallel);
        EXPECT_TRUE(L.attn.rope.neox);
        EXPECT_EQ(L.ssm.d_inner, 128);
        EXPECT_EQ(L.ssm.n_head, 8);
        EXPECT_EQ(L.ssm.n_group, 2);
        // Attention leaves its result for its output projection, which is added after the mixer.
        EXPECT_EQ(model::layer_block_kinds(L), (std::vector<BlockKind>{BlockKind::ParallelAttention, BlockKind::SsmMixer,
                                                                       BlockKind::AttentionOutput, BlockKind::DenseFfn}));
    }
    // Both memories: 2 kv heads of 16 per layer in the cache, and per layer the conv state
    // [128 + 2*2*16 channels][3 taps kept] and the SSM state [8 heads][16][16 states].
    EXPECT_EQ(spec.kv_bytes_per_token(), uint64_t(2 * 2 * (16 + 16) * 4));
    const uint64_t state_per_layer = (uint64_t(192) * 3 + uint64_t(128) * 16) * 4;
    EXPECT_EQ(spec.recurrent_state_bytes(), 2 * state_per_layer);
    model::Forward f(in.context(), spec, in.weights(), 512, /*n_batch=*/8, true, KvCacheType::F32);
    EXPECT_EQ(f.kv_bytes(), 512 * spec.kv_bytes_per_token());
    EXPECT_EQ(f.recurrent_bytes(), 2 * state_per_layer);
    const ModelInfo info = g.model->info();
    EXPECT_EQ(info.n_ssm_layers, 2);
    EXPECT_EQ(info.n_global_layers, 2);
    EXPECT_TRUE(info.layers[0].ssm_beside_attention);
    EXPECT_EQ(info.layers[0].ssm.d_inner, 128);
    EXPECT_NE(info.layer_table().find("beside it Mamba-2 inner 128 state 16 heads 8 groups 2 conv 4"), std::string::npos)
        << info.layer_table();
}

}  // namespace
}  // namespace vkllm
