// End-to-end truth from outside: stories260K (a real Llama-architecture model) in four file
// types against llama.cpp's logits and greedy text (tests/golden/stories260K, made by
// scripts/make-golden-stories260K.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "gpu/device.h"
#include "model/spec.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

struct Case {
    std::string quant;
    double logit_tolerance;  // max abs vs llama.cpp's exact mode
};

std::vector<std::string> prompts() {
    std::ifstream f(test::source_dir() + "/tests/golden/stories260K/prompts.txt");
    std::vector<std::string> out;
    for (std::string line; std::getline(f, line);)
        if (!line.empty()) out.push_back(line);
    return out;
}

std::vector<int32_t> read_ids(const std::string& path) {
    std::ifstream f(path);
    std::vector<int32_t> ids;
    for (int32_t id; f >> id;) ids.push_back(id);
    return ids;
}

std::vector<float> read_f32(const std::string& path) {
    auto bytes = test::read_file(path);
    std::vector<float> v(bytes.size() / 4);
    std::memcpy(v.data(), bytes.data(), v.size() * 4);
    return v;
}

class Stories260K : public ::testing::TestWithParam<Case> {};

TEST_P(Stories260K, LogitsAndGreedyTextMatchLlamaCpp) {
    VKLLM_REQUIRE_SHARED(shared);
    const Case& c = GetParam();
    const uint64_t errors_before = gpu::validation_error_count();
    auto model = Model::load(shared + "/models/stories260K/stories260K-" + c.quant + ".gguf");
    auto ps = prompts();
    ASSERT_EQ(ps.size(), 4u);
    for (size_t i = 0; i < ps.size(); ++i) {
        SCOPED_TRACE("prompt '" + ps[i] + "'");
        const std::string golden = test::source_dir() + "/tests/golden/stories260K/" + c.quant + "-" + std::to_string(i);
        std::vector<int32_t> tokens = model->tokenizer().encode(ps[i], true, false);
        ASSERT_EQ(tokens, read_ids(golden + ".tokens.txt"));

        Session session(*model);
        std::vector<float> logits = session.eval(tokens, /*all_logits=*/true);
        std::vector<float> ref = read_f32(golden + ".logits.f32");
        ASSERT_EQ(logits.size(), ref.size());
        EXPECT_LE(test::max_abs_diff(logits, ref), c.logit_tolerance);

        // Greedy continuation, token by token through the KV cache.
        std::vector<int32_t> expected = read_ids(golden + ".greedy.txt");
        ASSERT_EQ(expected.size(), 64u);
        std::vector<float> last(logits.end() - model->spec().n_vocab, logits.end());
        std::vector<int32_t> got;
        while (got.size() < expected.size()) {
            int32_t next = int32_t(std::max_element(last.begin(), last.end()) - last.begin());
            got.push_back(next);
            if (got.size() < expected.size()) last = session.eval({next});
        }
        EXPECT_EQ(got, expected) << "vkllm: " << model->tokenizer().decode(got)
                                 << "\nllama.cpp: " << model->tokenizer().decode(expected);
    }
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

INSTANTIATE_TEST_SUITE_P(AllFileTypes, Stories260K,
                         ::testing::Values(Case{"F32", 1e-3}, Case{"F16", 2e-2}, Case{"Q8_0", 2e-2}, Case{"Q4_0", 2e-2}),
                         [](const auto& info) { return info.param.quant; });

TEST(Stories260KRun, OnceUponATimeStartsAsExpected) {
    VKLLM_REQUIRE_SHARED(shared);
    auto model = Model::load(shared + "/models/stories260K/stories260K-F32.gguf");
    Session session(*model);
    auto tokens = model->tokenizer().encode("Once upon a time", true, false);
    std::vector<float> logits = session.eval(tokens);
    std::vector<int32_t> out;
    for (int i = 0; i < 12; ++i) {
        int32_t next = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
        out.push_back(next);
        logits = session.eval({next});
    }
    EXPECT_EQ(model->tokenizer().decode(out).rfind(", there was a little girl named Lily.", 0), 0u)
        << model->tokenizer().decode(out);
}

}  // namespace
}  // namespace vkllm
