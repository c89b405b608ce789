// RWKV-7 (llama.cpp's `rwkv7`) against llama.cpp on two golden random models (tests/golden/rwkv7:
// 3 layers, two wkv heads; tests/golden/rwkv7-3head: 2 layers, three heads, another seed): the
// CPU reference forward (through ReferenceForward, as one prompt and as a prompt then single
// tokens), the goldens' reproducibility from vkllm-random-model's options, and through the public
// model and session API the logits of every prompt position in passes of 256 and of 4 tokens (the
// token shifts and wkv states carried over 30 passes) and llama.cpp's 32 greedy tokens; on the
// first, one-token steps (the matvec path and decode's replayed recording), truncation that
// re-evaluates from position 0, and the state's fixed size with no KV cache. CTest runs it
// natively and under VKLLM_LIMITS=mobile.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpu/device.h"
#include "greedy.h"
#include "model/forward.h"
#include "model/model_internal.h"
#include "param_names.h"
#include "random_model/random_model.h"
#include "reference/reference_forward.h"
#include "test_support.h"
#include "vkllm/model.h"
#include "vkllm/model_info.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

struct Golden {
    std::unique_ptr<Model> model;
    std::vector<int32_t> tokens, greedy;
    std::vector<float> logits;  // llama.cpp's [tokens][n_vocab]
    size_t n_vocab = 0;
};

// The goldens: "rwkv7" (3 layers, two heads, seed 701) and "rwkv7-3head" (2 layers, three heads,
// n_ff 224, seed 977), each in its folder of tests/golden.
Golden load_golden(const std::string& name = "rwkv7") {
    const std::string base = test::source_dir() + "/tests/golden/" + name + "/" + name;
    Golden g;
    g.model = Model::load(base + ".gguf");
    g.tokens = test::read_ids(base + ".tokens.txt");
    g.greedy = test::read_ids(base + ".greedy.txt");
    g.logits = test::read_f32(base + ".logits.f32");
    g.n_vocab = size_t(g.model->internals().spec().n_vocab);
    return g;
}

// Largest |logit - llama.cpp's| over `rows` positions from `from` (row 0 of `got` = position from).
double max_diff(const Golden& g, const std::vector<float>& got, size_t from, size_t rows) {
    EXPECT_GE(got.size(), rows * g.n_vocab);
    double m = 0;
    for (size_t i = 0; i < rows * g.n_vocab && i < got.size(); ++i)
        m = std::max(m, double(std::fabs(got[i] - g.logits[from * g.n_vocab + i])));
    return m;
}

class Rwkv7Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Rwkv7Golden, ReferenceMatchesLlamaCppAsOnePromptAndAsSteps) {
    const Golden g = load_golden(GetParam());
    const auto& in = g.model->internals();
    model::ReferenceForward one(in.file(), in.spec(), 256);
    EXPECT_LT(max_diff(g, one.eval(g.tokens), 0, g.tokens.size()), 1e-4);
    // a prompt of 50, then one token at a time: the state carries everything
    model::ReferenceForward steps(in.file(), in.spec(), 256);
    std::vector<float> got = steps.eval(std::vector<int32_t>(g.tokens.begin(), g.tokens.begin() + 50));
    for (size_t t = 50; t < g.tokens.size(); ++t) {
        const std::vector<float> row = steps.eval({g.tokens[t]});
        got.insert(got.end(), row.begin(), row.end());
    }
    EXPECT_LT(max_diff(g, got, 0, g.tokens.size()), 1e-4);
    EXPECT_EQ(steps.n_past(), int(g.tokens.size()));
    std::vector<float> probs;
    EXPECT_THROW(steps.eval({g.tokens[0]}, /*probs_layer=*/0, &probs), model::ModelError) << "no attention to probe";
}

TEST(Rwkv7Reference, GoldenModelsAreReproducible) {
    const auto shared = test::shared_dir();
    if (!shared) GTEST_SKIP() << "no shared data (the stories260K vocabulary)";
    random_model::RandomModelConfig c;
    c.arch = "rwkv7", c.seed = 701, c.n_embd = 128, c.n_layer = 3, c.n_ff = 128;
    const auto vocab = gguf::File::open(*shared + "/models/stories260K/stories260K-F32.gguf");
    const std::vector<uint8_t> bytes = random_model::build_random_model(c, *vocab).to_bytes();
    EXPECT_TRUE(bytes == test::read_file(test::source_dir() + "/tests/golden/rwkv7/rwkv7.gguf"))
        << "vkllm-random-model --arch rwkv7 --seed 701 --n-embd 128 --n-layer 3 --n-ff 128 writes the golden";
    c.seed = 977, c.n_embd = 192, c.n_layer = 2, c.n_ff = 224;
    EXPECT_TRUE(random_model::build_random_model(c, *vocab).to_bytes() ==
                test::read_file(test::source_dir() + "/tests/golden/rwkv7-3head/rwkv7-3head.gguf"))
        << "vkllm-random-model --arch rwkv7 --seed 977 --n-embd 192 --n-layer 2 --n-ff 224 writes the golden";
    c.n_embd = 96;  // not a multiple of the head size
    EXPECT_THROW(random_model::build_random_model(c, *vocab), random_model::ConfigError);
}

TEST_P(Rwkv7Golden, EveryPositionAndGreedyTextMatchLlamaCppAtBatches256And4) {
    const uint64_t errors_before = gpu::validation_error_count();
    const Golden g = load_golden(GetParam());
    for (const int n_batch : {256, 4}) {
        SCOPED_TRACE("batch " + std::to_string(n_batch));
        SessionOptions so;
        so.n_batch = n_batch;
        Session s(*g.model, so);
        const std::vector<float> logits = s.eval(g.tokens, /*all_logits=*/true);
        ASSERT_EQ(logits.size(), g.logits.size());
        EXPECT_LT(max_diff(g, logits, 0, g.tokens.size()), 1e-3);
        ASSERT_EQ(g.greedy.size(), 32u);
        EXPECT_EQ(test::greedy_continuation(s, std::vector<float>(logits.end() - long(g.n_vocab), logits.end()),
                                            g.greedy.size()),
                  g.greedy);
    }
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

INSTANTIATE_TEST_SUITE_P(Golden, Rwkv7Golden, ::testing::Values("rwkv7", "rwkv7-3head"), test::ModelParamName());

TEST(Rwkv7, OneTokenStepsAndTruncationMatchLlamaCpp) {
    const uint64_t errors_before = gpu::validation_error_count();
    const Golden g = load_golden();
    SessionOptions so;
    so.n_batch = 8;
    Session s(*g.model, so);
    // A prompt of 9 (two passes), then one token per eval: decode over two replay buckets.
    const std::vector<float> first = s.eval(std::vector<int32_t>(g.tokens.begin(), g.tokens.begin() + 9), true);
    double worst = max_diff(g, first, 0, 9);
    for (size_t p = 9; p < g.tokens.size(); ++p) worst = std::max(worst, max_diff(g, s.eval({g.tokens[p]}), p, 1));
    EXPECT_LT(worst, 1e-3);
    // The state folds every position in: back to 60 tokens re-evaluates them from position 0.
    const size_t n = g.tokens.size();
    s.truncate(60);
    const std::vector<float> rest = s.eval(std::vector<int32_t>(g.tokens.begin() + 60, g.tokens.end()), true);
    EXPECT_LT(max_diff(g, rest, 60, n - 60), 1e-3);
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

TEST(Rwkv7, StateIsFixedPerSequenceWithNoKvCache) {
    const Golden g = load_golden();
    const auto& in = g.model->internals();
    const model::ModelSpec& spec = in.spec();
    ASSERT_EQ(spec.n_layer, 3);
    for (const model::LayerSpec& L : spec.layers) {
        EXPECT_EQ(L.mixer, model::LayerMixer::Rwkv7);
        EXPECT_TRUE(L.has_ffn);
        EXPECT_EQ(L.rwkv.n_head(), 2);
        EXPECT_EQ(L.rwkv.decay_rank, 16);
        EXPECT_EQ(L.rwkv.iclr_rank, 12);
        EXPECT_EQ(L.rwkv.value_rank, 8);
        EXPECT_EQ(L.rwkv.gate_rank, 20);
    }
    // Per layer two token shifts [128] and the wkv state, two heads of [64][64], f32.
    const uint64_t per_layer = (2 * 128 + 128 * 64) * 4;
    EXPECT_EQ(spec.recurrent_state_bytes(), 3 * per_layer);
    EXPECT_EQ(spec.kv_bytes_per_token(), 0u);
    for (const int n_ctx : {256, 4096}) {
        model::Forward f(in.context(), spec, in.weights(), n_ctx, /*n_batch=*/8);
        EXPECT_EQ(f.recurrent_bytes(), 3 * per_layer) << n_ctx;
        EXPECT_EQ(f.kv_bytes(), 0u) << n_ctx;
    }
    const ModelInfo info = g.model->info();
    EXPECT_EQ(info.n_rwkv_layers, 3);
    EXPECT_EQ(info.state_bytes_per_sequence, 3 * per_layer);
    EXPECT_EQ(info.layers[1].mixer, MixerKind::Rwkv7);
    EXPECT_EQ(info.layers[1].rwkv.head_size, 64);
    EXPECT_NE(info.layer_table().find("RWKV-7 wkv 2 x 64"), std::string::npos) << info.layer_table();
}

}  // namespace
}  // namespace vkllm
