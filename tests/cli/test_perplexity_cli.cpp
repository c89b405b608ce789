// vkllm perplexity against llama.cpp's definition computed from llama.cpp's own logits
// (tests/golden/perplexity: llama_perplexity.py and the numbers it wrote), and its errors.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace vkllm {
namespace {

using Result = test::ShellResult;

// vkllm with `args`, its stderr sent to `stderr_to`.
Result vkllm(const std::string& args, const std::string& stderr_to) {
    return test::shell(test::vkllm_bin() + " " + args + " 2>" + stderr_to);
}

std::string golden_dir() { return test::source_dir() + "/tests/golden/perplexity/"; }

// vkllm's perplexity of the held-out text equals the golden one within 1e-3 relative, with
// the same chunks and scored tokens.
void check_against_golden(const std::string& model, const std::string& golden) {
    const nlohmann::json g = nlohmann::json::parse(std::ifstream(golden_dir() + golden));
    const Result r = vkllm("perplexity -m " + model + " -f " + golden_dir() + "heldout.txt -c " +
                               std::to_string(int(g["n_ctx"])) + " --json",
                           "/dev/null");
    ASSERT_EQ(r.code, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["tokens"], g["tokens"]);
    EXPECT_EQ(j["chunks"], g["chunks"]);
    EXPECT_EQ(j["scored_tokens"], g["scored_tokens"]);
    const double want = g["perplexity"], got = j["perplexity"];
    EXPECT_NEAR(got, want, 1e-3 * want) << golden;
    ASSERT_EQ(j["chunk_perplexity"].size(), g["chunk_perplexity"].size());
    for (size_t i = 0; i < g["chunk_perplexity"].size(); ++i)
        EXPECT_NEAR(double(j["chunk_perplexity"][i]), double(g["chunk_perplexity"][i]),
                    1e-3 * double(g["chunk_perplexity"][i]))
            << golden << " after chunk " << i + 1;
}

TEST(PerplexityCli, ZooDenseMatchesLlamaCpp) {
    check_against_golden(test::source_dir() + "/assets/zoo/zoo-dense.gguf", "zoo-dense-c128.json");
}

TEST(PerplexityCli, ZooMoeWithAnOddContextMatchesLlamaCpp) {
    check_against_golden(test::source_dir() + "/assets/zoo/zoo-moe.gguf", "zoo-moe-c100.json");
}

TEST(PerplexityCli, Stories260KMatchesLlamaCpp) {
    const auto shared = test::shared_dir();
    if (!shared) GTEST_SKIP() << "../shared is absent: stories260K is not available";
    check_against_golden(*shared + "/models/stories260K/stories260K-F32.gguf", "stories260K-c128.json");
}

TEST(PerplexityCli, ProgressTextAndErrors) {
    const std::string text = golden_dir() + "heldout.txt";
    Result r = vkllm("perplexity -f " + text + " -c 128", "&1");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("[1]"), std::string::npos) << r.out;  // progress per chunk
    EXPECT_NE(r.out.find("[6]"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("perplexity: "), std::string::npos) << r.out;
    r = vkllm("perplexity -f " + text + " -c 512", "&1");  // 841 tokens: not two chunks of 512
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("needs at least 1024"), std::string::npos) << r.out;
    r = vkllm("perplexity -c 64", "&1");
    EXPECT_EQ(r.code, 2) << r.out;
    r = vkllm("perplexity -f /nonexistent/text.txt", "&1");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("cannot read /nonexistent/text.txt"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace vkllm
