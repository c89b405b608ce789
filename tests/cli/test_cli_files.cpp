// vkllm info, inspect and quantize as scripts use them: info --json's field names (a contract),
// inspect's tensor list against its totals, quantize's output and its failures.
#include <gtest/gtest.h>

#include <array>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/wait.h>

#include "test_support.h"

namespace vkllm {
namespace {

namespace fs = std::filesystem;

using Result = test::ShellResult;

Result run(const std::string& args, bool with_stderr = false) {
    return test::shell(test::vkllm_bin() + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

std::string zoo(const std::string& name) { return test::source_dir() + "/assets/zoo/" + name + ".gguf"; }

TEST(CliFiles, InfoJsonHasTheFieldsScriptsRead) {
    const Result r = run("info --json");
    ASSERT_EQ(r.code, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    ASSERT_TRUE(j.at("devices").is_array());
    ASSERT_FALSE(j.at("devices").empty());
    for (const auto& d : j.at("devices")) {
        for (const char* key :
             {"index", "name", "type", "vendor_id", "device_id", "api_version", "driver_version", "driver_name",
              "driver_info", "limits_profile", "subgroup_size", "subgroup_basic", "subgroup_arithmetic",
              "subgroup_shuffle", "subgroup_ballot", "max_shared_memory", "max_workgroup_invocations",
              "max_workgroup_size", "max_workgroup_count", "max_storage_buffer_range", "max_memory_allocation_size",
              "min_storage_buffer_offset_alignment", "max_push_constants_size", "heaps", "fp16_arithmetic",
              "int8_arithmetic", "storage_8bit", "storage_16bit", "integer_dot_product", "integer_dot_accelerated",
              "integer_dot_matvec", "cooperative_matrix",
              "timestamps", "timestamp_period_ns", "vendor", "mobile_clamp_changes"})
            EXPECT_TRUE(d.contains(key)) << key;
        EXPECT_EQ(d.at("max_workgroup_size").size(), 3u);
        for (const auto& h : d.at("heaps")) {
            EXPECT_TRUE(h.at("size").is_number_unsigned());
            EXPECT_TRUE(h.at("device_local").is_boolean());
        }
    }
    const Result text = run("info");
    ASSERT_EQ(text.code, 0);
    EXPECT_EQ(text.out.rfind("device 0: ", 0), 0u) << text.out;
    EXPECT_NE(text.out.find("mobile clamp (VKLLM_LIMITS=mobile)"), std::string::npos) << text.out;
    EXPECT_EQ(run("info --yaml").code, 2);
}

TEST(CliFiles, InspectListsEveryTensorAndItsBytesAddUp) {
    const Result r = run("inspect " + zoo("zoo-moe") + " --tensors");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("architecture:  llama\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  expert_count                             8\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("    0  4/2         24        global           norm 24 base 10000       pre       moe 2/8 x 96 renorm\n"),
              std::string::npos)
        << r.out;
    uint64_t total = 0;
    ASSERT_EQ(std::sscanf(r.out.c_str() + r.out.find("tensor bytes:  "), "tensor bytes:  %" SCNu64, &total), 1);
    std::istringstream lines(r.out.substr(r.out.find("tensor list:\n")));
    std::string line;
    std::getline(lines, line);  // "tensor list:"
    std::getline(lines, line);  // the column names
    uint64_t sum = 0;
    int rows = 0;
    while (std::getline(lines, line)) {
        sum += std::stoull(line.substr(line.find_last_of(' ') + 1));  // the last column: bytes
        ++rows;
    }
    EXPECT_EQ(sum, total);
    // 4 layers x (attn_q/k/v/output, 2 norms, the router, 3 expert tensors) + token_embd + output_norm
    EXPECT_EQ(rows, 4 * 10 + 2);
}

TEST(CliFiles, QuantizeWritesAFileInspectReadsAndFailuresLeaveNothing) {
    const std::string dir = test::temp_path("cli-quantize");
    fs::create_directories(dir);
    const std::string out = dir + "/zoo-dense-q8.gguf";
    Result r = run("quantize " + zoo("zoo-dense") + " " + out + " q8_0");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find(" as Q8_0\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("F32 -> Q8_0"), std::string::npos) << r.out;
    r = run("inspect " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("Q8_0: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("architecture as vkllm runs it:\narchitecture llama (zoo-dense)"), std::string::npos) << r.out;

    // Into a folder that does not exist: exit 1 naming the path; over the input: refused.
    r = run("quantize " + zoo("zoo-dense") + " " + dir + "/missing/x.gguf Q4_0", true);
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("missing/x.gguf"), std::string::npos) << r.out;
    r = run("quantize " + out + " " + out + " Q4_0", true);
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("refusing to overwrite the input"), std::string::npos) << r.out;
    r = run("quantize " + zoo("zoo-dense") + " " + dir + "/y.gguf Q9_K", true);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("unknown or unsupported target type 'Q9_K'"), std::string::npos) << r.out;
    // Only the one good file is there: no temporaries left behind.
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
    fs::remove_all(dir);
}

}  // namespace
}  // namespace vkllm
