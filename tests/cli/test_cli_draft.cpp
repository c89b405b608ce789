// vkllm run --draft MODEL [--draft-n K]: the same text as without a draft, the acceptance rate
// in the timing line, and the errors (a draft with another vocabulary, a bad K).
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "test_support.h"

namespace vkllm {
namespace {

std::string zoo(const std::string& name) { return test::source_dir() + "/assets/zoo/" + name + ".gguf"; }

// vkllm with `args`; stdout, then stderr when `with_stderr`.
test::ShellResult vkllm(const std::string& args, bool with_stderr) {
    return test::shell(test::vkllm_bin() + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

const char* kGreedy = "-p 'Once upon a time' -n 24 --temp 0";

TEST(DraftCli, TheTextIsTheSameAsWithoutADraftAndTheAcceptanceRateIsPrinted) {
    const test::ShellResult plain = vkllm("run -m " + zoo("zoo-swa") + " " + kGreedy, false);
    ASSERT_EQ(plain.code, 0) << plain.out;
    ASSERT_GT(plain.out.size(), 30u);
    for (const char* k : {"1", "5"}) {
        SCOPED_TRACE(std::string("--draft-n ") + k);
        const std::string args = "run -m " + zoo("zoo-swa") + " --draft " + zoo("zoo-dense") + " --draft-n " + k + " " + kGreedy;
        const test::ShellResult spec = vkllm(args, false);
        ASSERT_EQ(spec.code, 0) << spec.out;
        EXPECT_EQ(spec.out, plain.out);

        const test::ShellResult both = vkllm(args + " --timings", true);
        ASSERT_EQ(both.code, 0) << both.out;
        std::smatch m;
        const std::regex rate(R"(decode 24 tokens in [0-9.]+ s \([0-9.]+ tokens/s\); draft: ([0-9]+)% of ([0-9]+) proposed tokens accepted)");
        ASSERT_TRUE(std::regex_search(both.out, m, rate)) << both.out;
        EXPECT_LE(std::stoi(m[1]), 100);
        EXPECT_GT(std::stoi(m[2]), 0);
        EXPECT_NE(both.out.find("tokens proposed per step"), std::string::npos) << both.out;
        EXPECT_NE(both.out.find("GPU time by op"), std::string::npos) << both.out;
    }
}

TEST(DraftCli, BadDraftsAreRefused) {
    const test::ShellResult missing = vkllm("run -m " + zoo("zoo-dense") + " --draft /nonexistent.gguf " + kGreedy, true);
    EXPECT_EQ(missing.code, 1) << missing.out;
    EXPECT_NE(missing.out.find("/nonexistent.gguf"), std::string::npos) << missing.out;

    for (const std::string& bad : {"--draft " + zoo("zoo-dense") + " --draft-n 0", std::string("--draft-n 3")}) {
        SCOPED_TRACE(bad);
        const test::ShellResult r = vkllm("run -m " + zoo("zoo-dense") + " " + bad + " " + kGreedy, true);
        EXPECT_EQ(r.code, 2) << r.out;
        EXPECT_NE(r.out.find("--draft"), std::string::npos) << r.out;
    }
}

TEST(DraftCli, ADraftWithAnotherVocabularyIsRefused) {
    const auto shared = test::shared_dir();
    if (!shared) GTEST_SKIP() << "../shared is absent: stories260K (a vocabulary other than the zoo's) is not available";
    const test::ShellResult r = vkllm("run -m " + zoo("zoo-dense") + " --draft " + *shared +
                                          "/models/stories260K/stories260K-Q4_0.gguf " + kGreedy, true);
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("different vocabularies"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("Once upon a time"), std::string::npos) << "refused before generating: " << r.out;
}

}  // namespace
}  // namespace vkllm
