// vkllm bench -d N: decode and prompt speed measured with N tokens of context already evaluated
// (llama-bench's depth), on the built-in model; and the GPU time by op family of a prompt pass
// and of a decode step that bench reports beside the speeds.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "test_support.h"

namespace vkllm {
namespace {

test::ShellResult run(const std::string& args) { return test::shell(test::vkllm_bin() + " " + args + " 2>&1"); }

TEST(BenchDepth, NamesTheDepthInTextAndJson) {
    test::ShellResult r = run("bench -p 8 -n 4 -d 40 -r 1");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("pp8 @ d40"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("tg4 @ d40"), std::string::npos) << r.out;
    r = run("bench -p 0 -n 3 -d 17 -r 1 --json");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("\"n_depth\":17,"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"decode_tps\":"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("\"decode_tps\":0.0,"), std::string::npos) << r.out;
    // Without -d the lines keep llama-bench's plain names.
    r = run("bench -p 4 -n 2 -r 1");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("tg2 "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find(" @ d"), std::string::npos) << r.out;
}

// ops_ms: one decode step; prompt_ops_ms: one prompt pass of -p tokens (two batches here). A
// prompt runs the tiled matmul, a decode step the matvecs; both run attention.
TEST(BenchDepth, ReportsGpuTimeByOpOfAPromptAndADecodeStep) {
    test::ShellResult r = run("bench -p 20 -b 16 -n 2 -r 1 --json");
    ASSERT_EQ(r.code, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
    ASSERT_TRUE(j["prompt_ops_ms"].is_object()) << r.out;
    ASSERT_TRUE(j["ops_ms"].is_object()) << r.out;
    EXPECT_TRUE(j["prompt_ops_ms"].contains("matmul")) << r.out;
    EXPECT_TRUE(j["prompt_ops_ms"].contains("attention")) << r.out;
    EXPECT_TRUE(j["ops_ms"].contains("attention")) << r.out;
    double prompt = 0, decode = 0;
    for (const auto& [op, ms] : j["prompt_ops_ms"].items()) prompt += ms.get<double>();
    for (const auto& [op, ms] : j["ops_ms"].items()) decode += ms.get<double>();
    EXPECT_GT(decode, 0.0) << r.out;
    EXPECT_GT(prompt, decode) << "20 tokens cost more GPU time than one: " << r.out;
    // Without -p there is no prompt pass to time.
    r = run("bench -p 0 -n 2 -r 1 --json");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_TRUE(nlohmann::json::parse(r.out.substr(r.out.find('{')))["prompt_ops_ms"].empty()) << r.out;
}

TEST(BenchDepth, AContextTooLongNamesTheOptions) {
    const test::ShellResult r = run("bench -p 0 -n 16777216 -d 16777216 -r 1000");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("-d + max(-p, -r x (-n + 1) + 1)"), std::string::npos) << r.out;
    EXPECT_EQ(run("bench -d -1").code, 2);
}

}  // namespace
}  // namespace vkllm
