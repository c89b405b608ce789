// vkllm probe --state and --state-map: the recurrent-state part of the document on the golden
// Mamba-2 and RWKV-7 models (every layer and head's norm and decay over the prompt and the
// generated tokens, a Mamba-2 head's causal mixing map, the NumPy sidecars) and its refusals.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace vkllm {
namespace {

using nlohmann::json;

test::ShellResult vkllm(const std::string& args) { return test::shell(test::vkllm_bin() + " " + args + " 2>&1"); }

std::string golden(const std::string& dir, const std::string& name) {
    return test::source_dir() + "/tests/golden/" + dir + "/" + name + ".gguf";
}

json read_json(const std::string& path) {
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << path;
    return json::parse(in);
}

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("vkllm-probe-state-" + std::to_string(::getpid()) + "-" + name))
        .string();
}

// Every state entry covers every token with positive norms and decays in (0, 1).
void check_state(const json& doc, const char* kind, int heads_per_layer) {
    const int n_tokens = int(doc["tokens"].size());
    ASSERT_FALSE(doc["state"].empty());
    EXPECT_EQ(doc["state"].size() % size_t(heads_per_layer), 0u);
    for (const json& e : doc["state"]) {
        EXPECT_EQ(e["kind"], kind);
        const std::vector<int> pos = e["positions"];
        const std::vector<float> norm = e["norm"], decay = e["decay"];
        ASSERT_EQ(pos.size(), size_t(n_tokens));
        ASSERT_EQ(norm.size(), size_t(n_tokens));
        ASSERT_EQ(decay.size(), size_t(n_tokens));
        for (int t = 0; t < n_tokens; ++t) {
            EXPECT_EQ(pos[size_t(t)], t);
            EXPECT_GT(norm[size_t(t)], 0.0f);
            EXPECT_GT(decay[size_t(t)], 0.0f);
            EXPECT_LT(decay[size_t(t)], 1.0f);
        }
    }
}

TEST(ProbeState, Mamba2StateAndMixingMap) {
    const std::string out = temp_path("mamba2.json");
    const auto r = vkllm("probe -m " + golden("ssm", "mamba2") +
                         " -p 'Once upon a time there was a cat' -n 2 --state --state-map 0:1,1:0 -o " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    const json doc = read_json(out);
    check_state(doc, "ssd", 1);
    const int n_tokens = int(doc["tokens"].size());
    ASSERT_EQ(doc["state_maps"].size(), 2u);
    for (const json& m : doc["state_maps"]) {
        EXPECT_EQ(m["kind"], "state_mixing");
        const std::vector<int> q = m["query_pos"], k = m["key_pos"];
        ASSERT_EQ(q.size(), size_t(n_tokens));
        ASSERT_EQ(k.size(), size_t(n_tokens));
        const json& v = m["values"];
        ASSERT_EQ(v.size(), size_t(n_tokens));
        double diag = 0;
        for (int t = 0; t < n_tokens; ++t)
            for (int s = 0; s < n_tokens; ++s) {
                const float x = v[size_t(t)][size_t(s)];
                if (s > t) {
                    EXPECT_EQ(x, 0.0f) << t << " " << s;
                }
                if (s == t) diag += std::fabs(x);
            }
        EXPECT_GT(diag, 0.0);
    }
    std::remove(out.c_str());

    // --npy: the traces and the maps in NumPy files named by the document.
    const auto n = vkllm("probe -m " + golden("ssm", "mamba2") + " -p 'Once upon a time' --state --state-map 0:1 --npy -o " + out);
    ASSERT_EQ(n.code, 0) << n.out;
    const json d = read_json(out);
    const std::string dir = std::filesystem::path(out).parent_path().string() + "/";
    ASSERT_TRUE(d.contains("state_npy"));
    for (const char* f : {"norm", "decay"}) {
        EXPECT_TRUE(std::filesystem::exists(dir + std::string(d["state_npy"][f]))) << f;
        std::filesystem::remove(dir + std::string(d["state_npy"][f]));
    }
    for (const json& e : d["state"]) EXPECT_TRUE(e["norm"].is_null() && e["npy_row"].is_number());
    const json& m = d["state_maps"][0];
    EXPECT_TRUE(m["values"].is_null());
    EXPECT_TRUE(std::filesystem::exists(dir + std::string(m["values_npy"])));
    std::filesystem::remove(dir + std::string(m["values_npy"]));
    std::remove(out.c_str());

    // --tile cuts the maps: query positions 2..5, keys 1..3.
    const auto t = vkllm("probe -m " + golden("ssm", "mamba2") + " -p 'Once upon a time there was' --state-map 0:1 " +
                         "--tile 2-5,1-3 -o " + out);
    ASSERT_EQ(t.code, 0) << t.out;
    const json tiled = read_json(out);
    const json& tm = tiled["state_maps"][0];
    EXPECT_EQ(tm["query_pos"], json({2, 3, 4, 5}));
    EXPECT_EQ(tm["key_pos"], json({1, 2, 3}));
    EXPECT_EQ(tm["values"].size(), 4u);
    EXPECT_EQ(tm["values"][0].size(), 3u);
    EXPECT_EQ(float(tm["values"][0][2]), 0.0f);  // position 3 is after query 2
    std::remove(out.c_str());
}

TEST(ProbeState, Rwkv7StateAndRefusals) {
    const std::string out = temp_path("rwkv7.json");
    const auto r = vkllm("probe -m " + golden("rwkv7", "rwkv7") + " -p 'Once upon a time' -n 1 --state -o " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    check_state(read_json(out), "wkv7", 2);
    std::remove(out.c_str());

    const auto no_map = vkllm("probe -m " + golden("rwkv7", "rwkv7") + " -p 'Once' --state-map 0:0 -o " + out);
    EXPECT_NE(no_map.code, 0);
    EXPECT_NE(no_map.out.find("only Mamba-2"), std::string::npos) << no_map.out;
    const auto bad = vkllm("probe -m " + golden("rwkv7", "rwkv7") + " -p 'Once' --state-map 0 -o " + out);
    EXPECT_NE(bad.code, 0);
    EXPECT_NE(bad.out.find("--state-map expects"), std::string::npos) << bad.out;
    EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace vkllm
