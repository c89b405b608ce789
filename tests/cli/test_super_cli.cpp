// vkllm inspect --super and the interventions of vkllm run (--zero-weight, --set-activation) on
// models with a planted super weight written by vkllm-random-model --plant-super-weight.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace vkllm {
namespace {

using Result = test::ShellResult;
using test::shell;
using test::vkllm_bin;

// stderr with stdout unless `stderr_to` says otherwise.
Result vkllm(const std::string& args, const std::string& stderr_to = "&1") {
    return shell(vkllm_bin() + " " + args + " 2>" + stderr_to);
}

// A planted model written by the tool beside vkllm, with the zoo's vocabulary.
std::string planted_model(const std::string& name, const std::string& options) {
    const std::string bin = vkllm_bin();
    const std::string tool = bin.substr(0, bin.find_last_of('/') + 1) + "vkllm-random-model";
    const std::string path = test::temp_path(name + ".gguf");
    const Result r = shell(tool + " --out " + path + " --seed 3 --n-layer 3 --vocab-from " + test::source_dir() +
                           "/assets/zoo/zoo-dense.gguf " + options + " 2>&1");
    EXPECT_EQ(r.code, 0) << r.out;
    return path;
}

void expect_super_weights(const std::string& model, int layer, const std::string& tensor, int64_t row, int64_t col,
                          int expert) {
    const Result r = vkllm("inspect --super " + model + " --json", "/dev/null");
    ASSERT_EQ(r.code, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["super_weights"].size(), 1u) << j["super_weights"].dump();
    const nlohmann::json& s = j["super_weights"][0];
    EXPECT_EQ(s["layer"], layer);
    EXPECT_EQ(s["tensor"], tensor);
    EXPECT_EQ(s["row"], row);
    EXPECT_EQ(s["col"], col);
    EXPECT_EQ(s["expert"], expert);
    EXPECT_GT(double(s["activation"]["value"]), 1000.0);
    EXPECT_EQ(s["activation"]["channel"], row);
    EXPECT_EQ(s["activation"]["token"], 0);
    ASSERT_TRUE(j["massive_activations"].is_array());
    EXPECT_EQ(j["massive_activations"].size(), 4u);  // embeddings and 3 layers
    EXPECT_FALSE(j["attention_sinks"].empty());
}

TEST(SuperCli, InspectSuperFindsThePlantedLlamaWeight) {
    expect_super_weights(planted_model("plant-llama", "--arch llama --plant-super-weight 1:10:20"), 1, "ffn_down", 10,
                         20, -1);
}

TEST(SuperCli, InspectSuperFindsThePlantedQwen3MoeExpertWeight) {
    expect_super_weights(planted_model("plant-qwen3moe", "--arch qwen3moe --n-ff-exp 64 --plant-super-weight 2:60:3:5"),
                         2, "ffn_down_exps", 60, 3, 5);
}

TEST(SuperCli, TextReportAndZooModelWithout) {
    Result r = vkllm("inspect --super " + test::source_dir() + "/assets/zoo/zoo-dense.gguf", "/dev/null");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("super weights: none"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("attention-sink mass"), std::string::npos) << r.out;
    EXPECT_EQ(vkllm("inspect --json").code, 2);
    EXPECT_EQ(vkllm("inspect --super --tensors").code, 2);
}

TEST(SuperCli, ZeroWeightAndSetActivationRemoveTheMassiveActivation) {
    const std::string m = planted_model("plant-llama-run", "--arch llama --plant-super-weight 1:10:20");
    const std::string run = "run -m " + m + " -p 'Once upon a time' -n 3 --temp 0 --activations";
    Result r = vkllm(run, "&1 >/dev/null");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("massive activations (above 100"), std::string::npos) << r.out;
    for (const char* edit : {"--zero-weight 1:ffn_down:10:20", "--set-activation 1:10=0",
                             "--set-activation 0:3=mean,1:10=0.5"}) {
        r = vkllm(run + " " + edit, "&1 >/dev/null");
        ASSERT_EQ(r.code, 0) << edit << "\n" << r.out;
        EXPECT_NE(r.out.find("no massive activations"), std::string::npos) << edit << "\n" << r.out;
    }
    r = vkllm(run + " --zero-weight 1:ffn_down:10:20", "&1 >/dev/null");
    EXPECT_NE(r.out.find("zeroed layer 1 ffn_down[10, 20] (was 4)"), std::string::npos) << r.out;
}

// perplexity --zero-weight: the planted weight zeroed gives another perplexity; a weight out of
// range is an error naming it.
TEST(SuperCli, PerplexityWithAWeightZeroed) {
    const std::string m = planted_model("plant-llama-ppl", "--arch llama --plant-super-weight 1:10:20");
    const std::string ppl = "perplexity -m " + m + " -f " + test::source_dir() + "/tests/golden/perplexity/heldout.txt -c 64 --json";
    Result a = vkllm(ppl, "/dev/null"), b = vkllm(ppl + " --zero-weight 1:ffn_down:10:20", "/dev/null");
    ASSERT_EQ(a.code, 0) << a.out;
    ASSERT_EQ(b.code, 0) << b.out;
    const double pa = nlohmann::json::parse(a.out)["perplexity"], pb = nlohmann::json::parse(b.out)["perplexity"];
    EXPECT_GT(std::fabs(pa - pb), 1e-3 * pa) << pa << " " << pb;
    const Result c = vkllm(ppl + " --zero-weight 1:ffn_down:64:20", "&1");
    EXPECT_EQ(c.code, 1) << c.out;
    EXPECT_NE(c.out.find("row is out of range [0, 64)"), std::string::npos) << c.out;
}

TEST(SuperCli, BadInterventionsAreClearErrors) {
    const std::string m = planted_model("plant-llama-bad", "--arch llama --plant-super-weight 1:10:20");
    const std::string run = "run -m " + m + " -p hi -n 1 ";
    struct Case {
        const char* args;
        int code;
        const char* message;
    };
    for (const Case& c : {Case{"--zero-weight 1:ffn_down:10", 2, "expected LAYER:TENSOR:ROW:COL"},
                          Case{"--zero-weight 1:ffn_down:x:20", 2, "'x' is not an integer"},
                          Case{"--zero-weight 1:ffn_down:99:20", 1, "row is out of range [0, 64)"},
                          Case{"--zero-weight 7:ffn_down:1:2", 1, "layer 7 is out of range"},
                          Case{"--set-activation 1:10", 2, "expected LAYER:CHANNEL=VALUE"},
                          Case{"--set-activation 1:10=big", 2, "'big' is not a number or 'mean'"},
                          Case{"--set-activation 1:640=0", 1, "640"}}) {
        const Result r = vkllm(run + c.args);
        EXPECT_EQ(r.code, c.code) << c.args << "\n" << r.out;
        EXPECT_NE(r.out.find(c.message), std::string::npos) << c.args << "\n" << r.out;
    }
}

}  // namespace
}  // namespace vkllm
