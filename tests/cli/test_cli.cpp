// The vkllm command line as a person uses it: exit codes, messages for bad input, and the
// output formats of run, logits and tokenize.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
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

TEST(Cli, UnknownCommandAndMissingArgumentsAreUsageErrors) {
    EXPECT_EQ(run("").code, 2);
    Result r = run("frobnicate");
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("unknown command 'frobnicate'"), std::string::npos) << r.out;
    r = run("logits -p hello");
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("-o are required"), std::string::npos) << r.out;
    r = run("run -m x.gguf -n many");
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("expects an integer"), std::string::npos) << r.out;
}

TEST(Cli, GarbageAndTruncatedFilesGiveAClearErrorAndExitCode1) {
    std::string garbage = write_file("garbage.gguf", "this is not a gguf file at all");
    for (const char* cmd : {"inspect", "run -m", "logits -o /dev/null -p hi -m", "tokenize -p hi -m"}) {
        Result r = run(std::string(cmd) + " " + garbage);
        EXPECT_EQ(r.code, 1) << cmd << ": " << r.out;
        EXPECT_NE(r.out.find("garbage.gguf"), std::string::npos) << cmd << ": " << r.out;
        EXPECT_NE(r.out.find("error"), std::string::npos) << cmd << ": " << r.out;
    }
    Result r = run("run -m " + test::temp_path("does-not-exist.gguf"));
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.out.find("does-not-exist.gguf"), std::string::npos) << r.out;
}

TEST(Cli, TruncatedModelIsRejected) {
    VKLLM_REQUIRE_SHARED(shared);
    auto bytes = test::read_file(shared + "/models/stories260K/stories260K-Q8_0.gguf");
    std::string path = write_file("truncated.gguf", std::string(bytes.begin(), bytes.begin() + long(bytes.size() / 2)));
    Result r = run("run -m " + path + " -p hi -n 4");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("truncated.gguf"), std::string::npos) << r.out;
}

TEST(Cli, RunTokenizeAndLogitsOnStories260K) {
    VKLLM_REQUIRE_SHARED(shared);
    const std::string model = shared + "/models/stories260K/stories260K-F32.gguf";
    Result r = run("run -m " + model + " -p 'Once upon a time' -n 12 --temp 0");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("Once upon a time, there was a little girl named Lily"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("tokens/s"), std::string::npos) << r.out;

    r = run("tokenize -m " + model + " -p 'Once upon a time'");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(r.out, "403 407 261 378\n");
    r = run("tokenize -m " + model + " -p 'Once upon a time' --add-special");
    EXPECT_EQ(r.out, "1 403 407 261 378\n");

    std::string out = test::temp_path("logits.f32");
    r = run("logits -m " + model + " -p 'Once upon a time' -o " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(test::read_file(out).size(), 5u * 512u * 4u);  // BOS + 4 tokens, 512 vocab

    // The same seed gives the same text; the prompt longer than the context is refused.
    Result a = run("run -m " + model + " -p 'Tom' -n 16 --temp 1.0 --seed 7");
    Result b = run("run -m " + model + " -p 'Tom' -n 16 --temp 1.0 --seed 7");
    ASSERT_EQ(a.code, 0);
    EXPECT_EQ(a.out.substr(0, a.out.find("vkllm:")), b.out.substr(0, b.out.find("vkllm:")));
    r = run("run -m " + model + " -c 4 -p 'Once upon a time there was a dog'");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("longer than the context"), std::string::npos) << r.out;
}

// With no -m, the commands use the model compiled into vkllm: the first command of someone who
// has downloaded nothing. The model is retrained now and then, so the text is not checked, only
// that there is some after the prompt.
TEST(Cli, RunWithoutModelGeneratesWithTheBuiltInModel) {
    const std::string err = test::temp_path("builtin-run.stderr");
    Result r = run("run -p 'Once upon a time' -n 16 --seed 1", err);
    std::vector<uint8_t> err_bytes = test::read_file(err);
    const std::string log(err_bytes.begin(), err_bytes.end());
    ASSERT_EQ(r.code, 0) << r.out << log;
    EXPECT_NE(log.find("no -m given; using the built-in model zoo-dense ("), std::string::npos) << log;
    ASSERT_EQ(r.out.rfind("Once upon a time", 0), 0u) << r.out;
    const std::string continuation = r.out.substr(std::strlen("Once upon a time"));
    EXPECT_NE(continuation.find_first_not_of(" \t\r\n"), std::string::npos) << "no text after the prompt: " << r.out;
    EXPECT_NE(log.find("decode"), std::string::npos) << log;
}

// --activations: one row per layer (and the embeddings) with the largest residual value, its
// position and channel, and the ratio to the median; the verdict on massive activations.
TEST(Cli, RunActivationsReportsEveryLayer) {
    VKLLM_REQUIRE_SHARED(shared);
    const std::string model = shared + "/models/stories260K/stories260K-F32.gguf";
    const std::string err = test::temp_path("activations.stderr");
    Result r = run("run -m " + model + " -p 'Once upon a time' -n 2 --temp 0 --activations", err);
    std::vector<uint8_t> err_bytes = test::read_file(err);
    const std::string log(err_bytes.begin(), err_bytes.end());
    ASSERT_EQ(r.code, 0) << r.out << log;
    ASSERT_NE(log.find("residual stream over 5 tokens (positions 0-4)"), std::string::npos) << log;
    // stories260K has 5 layers: rows embd, 0..4, each "layer max position token channel median ratio"
    std::istringstream lines(log.substr(log.find("max/median")));
    std::string line;
    std::getline(lines, line);
    std::vector<std::string> layers;
    while (std::getline(lines, line) && line.rfind("vkllm:", 0) != 0) {
        static const std::regex kRow(R"(^\s*(\S+)\s+([0-9.]+)\s+([0-9]+)\s+".*"\s+([0-9]+)\s+([0-9.]+)\s+[0-9.]+x.*$)");
        std::smatch m;
        ASSERT_TRUE(std::regex_match(line, m, kRow)) << line;
        const std::string layer = m[1];
        const double max_abs = std::stod(m[2]), median = std::stod(m[5]);
        const int position = std::stoi(m[3]), channel = std::stoi(m[4]);
        EXPECT_GE(position, 0) << line;
        EXPECT_LE(position, 4) << line;
        EXPECT_GE(channel, 0) << line;
        EXPECT_LT(channel, 64) << line;
        EXPECT_GE(max_abs, median) << line;
        layers.push_back(layer);
    }
    EXPECT_EQ(layers, (std::vector<std::string>{"embd", "0", "1", "2", "3", "4"})) << log;
    EXPECT_TRUE(line.find("no massive activations") != std::string::npos ||
                line.find("massive activations (above 100") != std::string::npos)
        << line;
}

TEST(Cli, TokenizeAndInspectWithoutAFileUseTheBuiltInModel) {
    Result r = run("tokenize -p 'Once upon a time'", "/dev/null");
    ASSERT_EQ(r.code, 0) << r.out;
    ASSERT_FALSE(r.out.empty());
    EXPECT_EQ(r.out.back(), '\n');
    EXPECT_EQ(r.out.find_first_not_of("0123456789 \n"), std::string::npos) << r.out;

    r = run("inspect");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("built-in model zoo-dense"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("architecture:  llama"), std::string::npos) << r.out;
}

TEST(Cli, HelpNamesTheBuiltInModelAndMissingFilesStillFail) {
    for (const char* cmd : {"run", "logits", "bench", "tokenize", "inspect"}) {
        Result r = run(std::string(cmd) + " --help");
        EXPECT_EQ(r.code, 0) << cmd << ": " << r.out;
        EXPECT_NE(r.out.find("usage:"), std::string::npos) << cmd << ": " << r.out;
        EXPECT_NE(r.out.find("built into vkllm"), std::string::npos) << cmd << ": " << r.out;
    }
    Result r = run("--help");
    EXPECT_NE(r.out.find("zoo-dense"), std::string::npos) << r.out;

    // -m still wins: a file that is not there is an error naming it, not a quiet fallback.
    const std::string missing = test::temp_path("no-such-model.gguf");
    for (const char* cmd : {"run -p hi -m", "logits -p hi -o /dev/null -m", "tokenize -p hi -m", "bench -m", "inspect"}) {
        r = run(std::string(cmd) + " " + missing);
        EXPECT_EQ(r.code, 1) << cmd << ": " << r.out;
        EXPECT_NE(r.out.find("no-such-model.gguf"), std::string::npos) << cmd << ": " << r.out;
        EXPECT_EQ(r.out.find("built-in"), std::string::npos) << cmd << ": " << r.out;
    }
    r = run("run -m '' -p hi");
    EXPECT_EQ(r.code, 2) << r.out;
}

}  // namespace
}  // namespace vkllm
