// zoo-hybrid, the project's trained state-space hybrid (assets/zoo, tools/zoo/train.py zoo-hybrid:
// Granite 4.0-H's layout, Mamba-2 layers with one attention layer in six), against llama.cpp: for
// each prompt of tests/golden/zoo/prompts.txt the prompt's tokens, the logits of every prompt
// position and 48 greedy tokens (tests/golden/zoo/zoo-hybrid-N, scripts/make-golden-zoo.sh), with
// the whole prompt in one batch; the longest prompt also four tokens a batch (the recurrent state
// and the attention layer's KV cache carried from pass to pass) and with the default F16 cache.
// The file is F32 and trained (clear winners), so the greedy texts must agree token for token.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "golden_cache.h"
#include "gpu/device.h"
#include "greedy.h"
#include "model/model_internal.h"
#include "model/spec.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

std::string golden(size_t i) { return test::source_dir() + "/tests/golden/zoo/zoo-hybrid-" + std::to_string(i); }

std::unique_ptr<Model> load_zoo_hybrid() { return Model::load(test::source_dir() + "/assets/zoo/zoo-hybrid.gguf"); }

TEST(ZooHybrid, LayersAreMamba2WithOneAttentionLayer) {
    auto model = load_zoo_hybrid();
    const model::ModelSpec& spec = model->internals().spec();
    EXPECT_EQ(spec.arch, "granitehybrid");
    ASSERT_EQ(spec.layers.size(), 6u);
    for (size_t l = 0; l < spec.layers.size(); ++l) {
        SCOPED_TRACE("layer " + std::to_string(l));
        EXPECT_EQ(spec.layers[l].mixer, l == 3 ? model::LayerMixer::Attention : model::LayerMixer::Mamba2);
        EXPECT_TRUE(spec.layers[l].has_ffn);
    }
}

TEST(ZooHybrid, LogitsAndGreedyTextMatchLlamaCpp) {
    const uint64_t errors_before = gpu::validation_error_count();
    auto model = load_zoo_hybrid();
    const int n_vocab = model->internals().spec().n_vocab;
    const auto prompts = test::read_lines(test::source_dir() + "/tests/golden/zoo/prompts.txt");
    ASSERT_EQ(prompts.size(), 4u);
    for (size_t i = 0; i < prompts.size(); ++i) {
        SCOPED_TRACE("prompt '" + prompts[i] + "'");
        const std::vector<int32_t> tokens = model->internals().tokenizer().encode(prompts[i], true, false);
        ASSERT_EQ(tokens, test::read_ids(golden(i) + ".tokens.txt"));
        const std::vector<float> ref = test::read_f32(golden(i) + ".logits.f32");
        const std::vector<int32_t> expected = test::read_ids(golden(i) + ".greedy.txt");
        ASSERT_EQ(expected.size(), 48u);
        struct Run {
            int n_batch;
            KvCacheType cache;
        };
        // The exact mode (F32 cache, the golden's own); for the longest prompt (22 tokens: six
        // passes of four) also in small batches, and the default cache.
        std::vector<Run> runs = {Run{256, KvCacheType::F32}};
        if (i == 2) runs.insert(runs.end(), {Run{4, KvCacheType::F32}, Run{256, KvCacheType::Auto}});
        for (Run run : runs) {
            SessionOptions so;
            so.n_batch = run.n_batch;
            so.kv_cache = run.cache;
            Session session(*model, so);
            SCOPED_TRACE("batch " + std::to_string(run.n_batch) + ", cache " +
                         kv_cache_type_name(session.kv_cache_usage().type));
            const double bound = session.kv_cache_usage().type == KvCacheType::F32 ? 1e-3 : test::kF16CacheBound;
            const std::vector<float> logits = session.eval(tokens, /*all_logits=*/true);
            ASSERT_EQ(logits.size(), ref.size());
            EXPECT_LE(test::max_abs_diff(logits, ref), bound);
            const std::vector<int32_t> got = test::greedy_continuation(
                session, std::vector<float>(logits.end() - n_vocab, logits.end()), expected.size());
            EXPECT_EQ(got, expected) << "vkllm: " << model->internals().tokenizer().decode(got)
                                     << "\nllama.cpp: " << model->internals().tokenizer().decode(expected);
        }
    }
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

}  // namespace
}  // namespace vkllm
