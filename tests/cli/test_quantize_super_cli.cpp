// vkllm quantize --keep-super-weights [--clip-sigmas K] on a planted model (vkllm-random-model
// --plant-super-weight): the report names the super weight and its correction, the file runs,
// keeps the planted massive activation, and the option errors are usage errors.
#include <gtest/gtest.h>

#include <string>

#include "test_support.h"

namespace vkllm {
namespace {

using Result = test::ShellResult;
using test::shell;
using test::vkllm_bin;

Result vkllm(const std::string& args) { return shell(vkllm_bin() + " " + args + " 2>&1"); }

std::string planted_model() {
    const std::string bin = vkllm_bin();
    const std::string tool = bin.substr(0, bin.find_last_of('/') + 1) + "vkllm-random-model";
    const std::string path = test::temp_path("quantize-plant.gguf");
    const Result r = shell(tool + " --out " + path + " --seed 3 --n-layer 3 --vocab-from " + test::source_dir() +
                           "/assets/zoo/zoo-dense.gguf --arch llama --plant-super-weight 1:10:20 2>&1");
    EXPECT_EQ(r.code, 0) << r.out;
    return path;
}

TEST(QuantizeSuperCli, KeepsThePlantedSuperWeight) {
    const std::string in = planted_model(), out = test::temp_path("quantize-plant-kept.gguf");
    Result r = vkllm("quantize " + in + " " + out + " q4_0 --keep-super-weights --clip-sigmas 4");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("super weights: 1 found;"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("clipped at 4 x RMS"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("layer 1 ffn_down [10, 20] = 4: kept (stored"), std::string::npos) << r.out;
    // The kept file keeps the massive activation (channel 10 from layer 1 on).
    r = vkllm("run -m " + out + " -p \"Once upon a time\" -n 1 --temp 0 --activations");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("MASSIVE"), std::string::npos) << r.out;
}

TEST(QuantizeSuperCli, OptionErrorsAreUsageErrors) {
    const std::string out = test::temp_path("quantize-bad.gguf");
    const std::string zoo = test::source_dir() + "/assets/zoo/zoo-dense.gguf";
    Result r = vkllm("quantize " + zoo + " " + out + " q4_0 --clip-sigmas 3");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("--clip-sigmas needs --keep-super-weights"), std::string::npos) << r.out;
    r = vkllm("quantize " + zoo + " " + out + " q4_0 --keep-super-weights --clip-sigmas -1");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("expected a number >= 0"), std::string::npos) << r.out;
    r = vkllm("quantize " + zoo + " " + out + " q4_0 --keep-super-weights --clip-sigmas");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("--clip-sigmas needs a value"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace vkllm
