// vkllm run --grammar FILE: stdout is text the GBNF grammar matches, for several seeds and
// prompts, on the built-in model (byte-level tokens) and stories260K (SentencePiece); bad grammar files are usage errors naming FILE:LINE:COLUMN,
// and --grammar with --json or --json-schema is refused.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>
#include <sys/wait.h>

#include "test_support.h"

namespace vkllm {
namespace {

using Result = test::ShellResult;

// Runs vkllm with `args`; its stderr goes to `stderr_to` (a shell redirection target).
Result run(const std::string& args, const std::string& stderr_to = "&1") {
    return test::shell(test::vkllm_bin() + " " + args + " 2>" + stderr_to);
}

std::string write_file(const std::string& name, const std::string& bytes) { return test::write_temp_file(name, bytes); }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The text `args` generates (stdout less the newline run adds); the run must succeed.
std::string generated(const std::string& args) {
    const Result r = run(args, "/dev/null");
    EXPECT_EQ(r.code, 0) << args << ": " << r.out;
    EXPECT_TRUE(!r.out.empty() && r.out.back() == '\n') << args << ": " << r.out;
    return r.out.empty() ? r.out : r.out.substr(0, r.out.size() - 1);
}

TEST(CliGrammar, YesOrNo) {
    const std::string g = write_file("yes_no.gbnf", "root ::= (\"yes\" | \"no\") \".\"  # a one-word answer\n");
    for (const char* prompt : {"Is it", "Once upon a time"})
        for (int seed : {1, 2, 3, 4}) {
            const std::string out = generated("run --grammar " + g + " -p '" + prompt + "' -n 20 --temp 1 --seed " +
                                              std::to_string(seed));
            EXPECT_TRUE(out == "yes." || out == "no.") << prompt << ", seed " << seed << ": '" << out << "'";
        }
}

TEST(CliGrammar, List) {
    const std::string g = write_file("list.gbnf", R"(root ::= item{2,4}
item ::= "- " [a-z]{1,8} (" " [a-z]{1,8})? "\n"
)");
    // Bounded words: the text is finite, so a small model cannot ramble past -n.
    const std::regex list("(- [a-z]{1,8}( [a-z]{1,8})?\n){2,4}");
    for (int seed : {1, 2, 3}) {
        const std::string out = generated("run --grammar " + g + " -p 'A list:' -n 300 --temp 1 --seed " + std::to_string(seed));
        EXPECT_TRUE(std::regex_match(out, list)) << "seed " << seed << ": '" << out << "'";
    }
    // The same seed gives the same text.
    EXPECT_EQ(generated("run --grammar " + g + " -p 'A list:' -n 300 --temp 1 --seed 7"),
              generated("run --grammar " + g + " -p 'A list:' -n 300 --temp 1 --seed 7"));
}

TEST(CliGrammar, SentenceOnStories260K) {
    VKLLM_REQUIRE_SHARED(shared);
    const std::string g = write_file("sentence.gbnf", R"(root ::= name " " verb " a " [a-z]{2,7} "."
name ::= "Tom" | "Lily"
verb ::= "had" | "saw"
)");
    const std::regex sentence("(Tom|Lily) (had|saw) a [a-z]{2,7}\\.");
    for (int seed : {1, 2, 3}) {
        const std::string out = generated("run -m " + shared + "/models/stories260K/stories260K-F32.gguf --grammar " + g +
                                          " -p 'Once upon a time' -n 60 --temp 1 --seed " + std::to_string(seed));
        EXPECT_TRUE(std::regex_match(out, sentence)) << "seed " << seed << ": '" << out << "'";
    }
}

TEST(CliGrammar, TextCutShortIsAnError) {
    const std::string g = write_file("long.gbnf", "root ::= [a-z]{10}\n");
    const Result r = run("run --grammar " + g + " -p Tom -n 3 --seed 1");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_TRUE(has(r.out, "the grammar's text is incomplete")) << r.out;
}

TEST(CliGrammar, BadGrammarFilesAreUsageErrors) {
    const std::string undefined = write_file("undefined.gbnf", "root ::= item\n\nitem ::= \"a\" other\n");
    Result r = run("run --grammar " + undefined + " -p x");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_TRUE(has(r.out, "--grammar " + undefined + ":3:14: undefined rule 'other'")) << r.out;
    const std::string left = write_file("left.gbnf", "root ::= root \"a\" | \"b\"\n");
    r = run("run --grammar " + left + " -p x");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_TRUE(has(r.out, left + ":1:1: rule 'root' is left recursive")) << r.out;
    r = run("run --grammar " + test::temp_path("missing.gbnf") + " -p x");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_TRUE(has(r.out, "--grammar: ")) << r.out;
    const std::string ok = write_file("ok.gbnf", "root ::= \"a\"\n");
    for (const char* other : {"--json", "--json-schema x.json"}) {
        r = run("run --grammar " + ok + " " + other + " -p x");
        EXPECT_EQ(r.code, 2) << other << ": " << r.out;
        EXPECT_TRUE(has(r.out, "--grammar does not combine with --json or --json-schema")) << r.out;
    }
}

}  // namespace
}  // namespace vkllm
