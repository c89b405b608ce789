// vkllm bench -d N: decode and prompt speed measured with N tokens of context already evaluated
// (llama-bench's depth), on the built-in model.
#include <gtest/gtest.h>

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

TEST(BenchDepth, AContextTooLongNamesTheOptions) {
    const test::ShellResult r = run("bench -p 0 -n 16777216 -d 16777216 -r 1000");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("-d + max(-p, -r x (-n + 1) + 1)"), std::string::npos) << r.out;
    EXPECT_EQ(run("bench -d -1").code, 2);
}

}  // namespace
}  // namespace vkllm
