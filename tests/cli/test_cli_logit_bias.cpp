// vkllm run --logit-bias ID=BIAS: -100 bans a token from greedy decoding, +100 forces it under
// sampling, and a bias out of [-100, 100], a malformed item or an id outside the vocabulary is a
// usage error naming the option. On the built-in model.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "test_support.h"

namespace vkllm {
namespace {

test::ShellResult run(const std::string& args) { return test::shell(test::vkllm_bin() + " " + args + " 2>&1"); }

std::string generated(const std::string& args) {
    const test::ShellResult r = test::shell(test::vkllm_bin() + " run -p 'Once upon a time' " + args + " 2>/dev/null");
    EXPECT_EQ(r.code, 0) << args << ": " << r.out;
    return r.out;
}

// The id of the last token `text` tokenizes to.
std::string last_id(const std::string& text) {
    const test::ShellResult r = test::shell(test::vkllm_bin() + " tokenize -p '" + text + "' 2>/dev/null");
    std::istringstream in(r.out);
    std::string id, last;
    while (in >> id) last = id;
    return last;
}

TEST(CliLogitBias, BansAndForcesATokenAndRefusesBadValues) {
    const std::string comma = last_id(",");
    ASSERT_FALSE(comma.empty());
    // Greedy, the model continues with a comma; banned, it does not.
    EXPECT_EQ(generated("-n 1 --temp 0"), "Once upon a time,\n");
    const std::string banned = generated("-n 1 --temp 0 --logit-bias " + comma + "=-100");
    EXPECT_NE(banned, "Once upon a time,\n");
    EXPECT_EQ(banned.rfind("Once upon a time", 0), 0u) << banned;
    // Forced at every step of a sampled run.
    EXPECT_EQ(generated("-n 3 --temp 1 --seed 5 --logit-bias 1=0.5," + comma + "=100"), "Once upon a time,,,\n");

    for (const char* bad : {"=1", "5=", "x=1", "5=101", "5=-100.5", "5=nan", "5:1", "-1=1"}) {
        const test::ShellResult r = run("run -n 1 --logit-bias '" + std::string(bad) + "'");
        EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
        EXPECT_NE(r.out.find("--logit-bias"), std::string::npos) << bad << ": " << r.out;
    }
    const test::ShellResult outside = run("run -n 1 --logit-bias 99999999=1");
    EXPECT_EQ(outside.code, 2) << outside.out;
    EXPECT_NE(outside.out.find("outside the vocabulary"), std::string::npos) << outside.out;
}

}  // namespace
}  // namespace vkllm
