// The project's own trained models (assets/zoo, made by tools/zoo/make-zoo.sh) against llama.cpp:
// for each model and each prompt of tests/golden/zoo/prompts.txt, the prompt's tokens, the logits
// of every prompt position and 48 greedy tokens (tests/golden/zoo, made by
// scripts/make-golden-zoo.sh). All are F32 but zoo-wide and zoo-facts, whose matrices are F16 (both engines
// round its activations to F16 before them, as llama.cpp's CPU backend does), so llama.cpp and
// vkllm must agree closely everywhere; a trained model (unlike a random one) has clear winners, so the greedy texts must be
// equal token for token: with the F32 cache (the goldens' own) and with the default F16 cache
// (golden_cache.h: logits within 3e-2).
#include <gtest/gtest.h>

#include <algorithm>

#include "gpu/device.h"
#include "golden_cache.h"
#include "greedy.h"
#include "model/spec.h"
#include "param_names.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"
#include "model/model_internal.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

struct ZooCase {
    std::string model;
    std::string arch;  // what the model must load as
    // Logits against llama.cpp's with the F32 cache. F16 weights: both engines round x to F16
    // and sum the products in their own orders (zoo-wide: 1.2e-3 to 2.6e-3 measured).
    double bound = 1e-3;
};

void PrintTo(const ZooCase& c, std::ostream* os) { *os << c.model; }

class Zoo : public ::testing::TestWithParam<ZooCase> {};

TEST_P(Zoo, LogitsAndGreedyTextMatchLlamaCpp) {
    const ZooCase& c = GetParam();
    if (test::left_out_of_slim_tree("assets/zoo/" + c.model + ".gguf"))
        GTEST_SKIP() << "assets/zoo/" << c.model << ".gguf is not in this slim tree (scripts/gpu-slim-branch.sh)";
    const uint64_t errors_before = gpu::validation_error_count();
    auto model = Model::load(test::source_dir() + "/assets/zoo/" + c.model + ".gguf");
    EXPECT_EQ(model->internals().spec().arch, c.arch);
    const int n_vocab = model->internals().spec().n_vocab;
    auto ps = test::read_lines(test::source_dir() + "/tests/golden/zoo/prompts.txt");
    ASSERT_EQ(ps.size(), 4u);
    for (size_t i = 0; i < ps.size(); ++i) {
        SCOPED_TRACE("prompt '" + ps[i] + "'");
        const std::string golden = test::source_dir() + "/tests/golden/zoo/" + c.model + "-" + std::to_string(i);
        std::vector<int32_t> tokens = model->internals().tokenizer().encode(ps[i], true, false);
        ASSERT_EQ(tokens, test::read_ids(golden + ".tokens.txt"));

        for (KvCacheType cache : {KvCacheType::F32, KvCacheType::Auto}) {
            SessionOptions so;
            so.kv_cache = cache;
            Session session(*model, so);
            SCOPED_TRACE(std::string("cache ") + kv_cache_type_name(session.kv_cache_usage().type));
            const double bound = session.kv_cache_usage().type == KvCacheType::F32 ? c.bound : test::kF16CacheBound;
            std::vector<float> logits = session.eval(tokens, /*all_logits=*/true);
            std::vector<float> ref = test::read_f32(golden + ".logits.f32");
            ASSERT_EQ(logits.size(), ref.size());
            EXPECT_LE(test::max_abs_diff(logits, ref), bound);

            std::vector<int32_t> expected = test::read_ids(golden + ".greedy.txt");
            ASSERT_EQ(expected.size(), 48u);
            std::vector<int32_t> got = test::greedy_continuation(
                session, std::vector<float>(logits.end() - n_vocab, logits.end()), expected.size());
            EXPECT_EQ(got, expected) << "vkllm: " << model->internals().tokenizer().decode(got)
                                     << "\nllama.cpp: " << model->internals().tokenizer().decode(expected);
        }
    }
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

INSTANTIATE_TEST_SUITE_P(AllModels, Zoo,
                         ::testing::Values(ZooCase{"zoo-dense", "llama"}, ZooCase{"zoo-swa", "gemma3"},
                                           ZooCase{"zoo-moe", "llama"}, ZooCase{"zoo-mla", "deepseek2"},
                                           ZooCase{"zoo-deep", "llama"}, ZooCase{"zoo-wide", "llama", 5e-3},
                                           ZooCase{"zoo-facts", "llama", 5e-3}),
                         [](const auto& info) { return test::test_name_of(info.param.model); });

}  // namespace
}  // namespace vkllm
