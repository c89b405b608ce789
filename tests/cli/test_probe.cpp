// vkllm probe: the JSON document it writes (shapes, probabilities, windows, routing, the logit
// lens against `vkllm logits`), its usage errors and its all-or-nothing write.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace vkllm {
namespace {

using nlohmann::json;

using Result = test::ShellResult;  // out: stdout and stderr

Result vkllm(const std::string& args) { return test::shell(test::vkllm_bin() + " " + args + " 2>&1"); }

std::string zoo(const std::string& name) { return test::source_dir() + "/assets/zoo/" + name + ".gguf"; }

json read_json(const std::string& path) {
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << path;
    return json::parse(in);
}

// A prompt longer than zoo-swa's window (32) so local layers hide early keys.
const char* kPrompt =
    "Once upon a time, Tom and Mia counted the red boxes: one, two, three, four, five. "
    "Tom said, \"the boxes are heavy\" and Mia laughed";

// Every attention entry against the header's contract: the key axis is 0..newest query, each
// row and its sink sum to 1, future keys and keys outside a sliding window hold 0.
void check_attention(const json& a, int n_tokens, const json& layer_info) {
    const int layer = a["layer"];
    const int n_head = a["n_head"], window = a["window"];
    EXPECT_EQ(n_head, int(layer_info["attention"]["n_head"]));
    EXPECT_EQ(window, int(layer_info["attention"]["window"]));
    const std::vector<int> query_pos = a["query_pos"], key_pos = a["key_pos"];
    // One row per prompt token, then one per generated token.
    std::vector<int> every(static_cast<size_t>(n_tokens));
    for (int i = 0; i < n_tokens; ++i) every[size_t(i)] = i;
    EXPECT_EQ(query_pos, every) << "layer " << layer;
    EXPECT_EQ(key_pos, every) << "layer " << layer;
    const json& probs = a["probs"];
    ASSERT_EQ(probs.size(), size_t(n_head));
    int future = 0, outside_window = 0, bad_sums = 0;  // counted, so that a failure is one line
    for (int h = 0; h < n_head; ++h) {
        ASSERT_EQ(probs[size_t(h)].size(), query_pos.size());
        for (size_t q = 0; q < query_pos.size(); ++q) {
            const std::vector<float> row = probs[size_t(h)][q];
            ASSERT_EQ(row.size(), key_pos.size());
            double sum = a["sink"].is_null() ? 0.0 : double(a["sink"][size_t(h)][q]);
            for (size_t k = 0; k < row.size(); ++k) {
                sum += row[k];
                const int qp = query_pos[q], kp = key_pos[k];
                future += kp > qp && row[k] != 0.0f;
                outside_window += window > 0 && kp <= qp - window && row[k] != 0.0f;
            }
            bad_sums += std::fabs(sum - 1.0) > 1e-4;
        }
    }
    EXPECT_EQ(future, 0) << "layer " << layer << ": nonzero probabilities of future keys";
    EXPECT_EQ(outside_window, 0) << "layer " << layer << ": nonzero probabilities outside the window";
    EXPECT_EQ(bad_sums, 0) << "layer " << layer << ": rows whose probabilities and sink do not sum to 1";
}

TEST(Probe, AttentionResidualAndLensOnZooSwa) {
    const std::string out = test::temp_path("probe-swa.json"), logits_path = test::temp_path("probe-swa.f32");
    const std::string model = "-m " + zoo("zoo-swa") + " -p '" + kPrompt + "'";
    Result r = vkllm("probe " + model + " -n 3 --attention all --residual --logit-lens all -o " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    const json doc = read_json(out);

    const json& m = doc["model"];
    EXPECT_EQ(m["arch"], "gemma3");
    const int n_layer = m["n_layer"], n_vocab = m["n_vocab"];
    ASSERT_EQ(m["layers"].size(), size_t(n_layer));
    int local_layers = 0, window = 0;
    for (const json& l : m["layers"]) {
        local_layers += int(l["attention"]["window"]) > 0;
        window = std::max(window, int(l["attention"]["window"]));
    }
    EXPECT_GT(local_layers, 0);

    const json& tokens = doc["tokens"];
    int n_prompt = 0;
    for (const json& t : tokens) n_prompt += !t["generated"].get<bool>();
    const int n_tokens = int(tokens.size());
    EXPECT_GT(n_prompt, window + 4);  // local layers hide the earliest keys of the last queries
    EXPECT_LE(n_tokens, n_prompt + 3);
    for (int i = 0; i < n_tokens; ++i) {
        EXPECT_EQ(tokens[size_t(i)]["position"], i);
        EXPECT_GE(int(tokens[size_t(i)]["id"]), 0);
        EXPECT_LT(int(tokens[size_t(i)]["id"]), n_vocab);
        EXPECT_TRUE(tokens[size_t(i)]["text"].is_string());
    }

    ASSERT_EQ(doc["attention"].size(), size_t(n_layer));
    for (const json& a : doc["attention"]) check_attention(a, n_tokens, m["layers"][size_t(int(a["layer"]))]);

    // Residual statistics: per eval, the embeddings (-1) and every layer, one value per token.
    const int n_evals = 1 + (n_tokens - n_prompt);
    EXPECT_EQ(doc["residual"].size(), size_t(n_evals * (n_layer + 1)));
    for (const json& s : doc["residual"]) {
        const size_t n = int(s["eval"]) == 0 ? size_t(n_prompt) : 1;
        EXPECT_EQ(s["token_max_abs"].size(), n);
        EXPECT_EQ(s["token_channel"].size(), n);
        EXPECT_GE(float(s["max_abs"]), float(s["median_abs"]));
    }

    // The last layer's lens at the last prompt position is the model's own next-token
    // distribution: its top token is the argmax of `vkllm logits`' last row, and the first
    // greedy token.
    r = vkllm("logits " + model + " -o " + logits_path);
    ASSERT_EQ(r.code, 0) << r.out;
    const std::vector<float> logits = test::read_f32(logits_path);
    ASSERT_EQ(logits.size(), size_t(n_prompt) * size_t(n_vocab));
    const auto last = logits.end() - n_vocab;
    const int argmax = int(std::max_element(last, logits.end()) - last);
    bool found = false;
    EXPECT_EQ(doc["logit_lens"].size(), size_t(n_evals * n_layer));
    for (const json& l : doc["logit_lens"]) {
        ASSERT_FALSE(l["top"].empty());
        float previous = 1.0f;
        for (const json& t : l["top"]) {
            EXPECT_LE(float(t["p"]), previous);
            previous = t["p"];
        }
        if (int(l["eval"]) == 0 && int(l["layer"]) == n_layer - 1) {
            found = true;
            EXPECT_EQ(l["position"], n_prompt - 1);
            EXPECT_EQ(l["top"][0]["id"], argmax);
        }
    }
    EXPECT_TRUE(found);
    if (n_tokens > n_prompt) {
        EXPECT_EQ(tokens[size_t(n_prompt)]["id"], argmax);
    }
    std::remove(out.c_str());
    std::remove(logits_path.c_str());
}

TEST(Probe, RoutingFfnDownAndTimingsOnZooMoe) {
    const std::string out = test::temp_path("probe-moe.json");
    Result r = vkllm("probe -m " + zoo("zoo-moe") + " -p 'Once upon a time, Tom' -n 2 --routing --ffn-down --timings -o " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    const json doc = read_json(out);
    const json& layers = doc["model"]["layers"];
    const int n_tokens = int(doc["tokens"].size());
    int n_generated = 0;
    for (const json& t : doc["tokens"]) n_generated += t["generated"].get<bool>();
    int moe_layers = 0;
    for (const json& l : layers) moe_layers += l["ffn"]["kind"] == "moe";
    EXPECT_GT(moe_layers, 0);

    ASSERT_EQ(doc["routing"].size(), size_t(moe_layers));
    for (const json& p : doc["routing"]) {
        const json& ffn = layers[size_t(int(p["layer"]))]["ffn"];
        const int n_expert = ffn["n_expert"], top_k = ffn["top_k"];
        EXPECT_EQ(p["top_k"], top_k);
        ASSERT_EQ(p["experts"].size(), size_t(n_tokens));
        ASSERT_EQ(p["weights"].size(), size_t(n_tokens));
        std::vector<int> positions = p["positions"];
        for (int i = 0; i < n_tokens; ++i) EXPECT_EQ(positions[size_t(i)], i);
        for (int t = 0; t < n_tokens; ++t) {
            std::vector<int> experts = p["experts"][size_t(t)];
            std::vector<float> weights = p["weights"][size_t(t)];
            ASSERT_EQ(experts.size(), size_t(top_k));
            ASSERT_EQ(weights.size(), size_t(top_k));
            double sum = 0;
            for (int k = 0; k < top_k; ++k) {
                EXPECT_GE(experts[size_t(k)], 0);
                EXPECT_LT(experts[size_t(k)], n_expert);
                for (int j = 0; j < k; ++j) EXPECT_NE(experts[size_t(j)], experts[size_t(k)]) << "an expert chosen twice";
                EXPECT_GT(weights[size_t(k)], 0.0f);
                sum += weights[size_t(k)];
            }
            EXPECT_NEAR(sum, 1.0, 1e-4);  // Mixtral renormalises the chosen gates
        }
    }

    EXPECT_FALSE(doc["ffn_down"].empty());
    for (const json& f : doc["ffn_down"]) {
        EXPECT_GE(float(f["in_max_abs"]), float(f["in_median_abs"]));
        EXPECT_GE(float(f["out_max_abs"]), float(f["out_median_abs"]));
        EXPECT_LT(int(f["out_position"]), n_tokens);
    }

    const json& t = doc["timings"];
    EXPECT_EQ(t["passes"], 1 + n_generated);  // the prompt in one pass, then one per generated token
    EXPECT_GT(int(t["dispatches"]), 0);
    EXPECT_GT(int(t["barriers"]), 0);
    EXPECT_FALSE(t["by_op"].empty());
    EXPECT_GT(double(t["total_ms"]), 0.0);
    EXPECT_EQ(t["by_layer"].size(), layers.size() + 1);
    std::remove(out.c_str());
}

TEST(Probe, BadArgumentsAreUsageErrors) {
    const std::string out = test::temp_path("probe-bad.json");
    const std::string model = "-m " + zoo("zoo-dense");
    struct Case {
        std::string args, message;
    };
    const std::vector<Case> cases = {
        {"probe -p hello", "-o are required"},
        {"probe -o " + out, "-o are required"},
        {"probe " + model + " -p hi --attention 99 -o " + out, "layer 99 is out of range"},
        {"probe " + model + " -p hi --attention 1,x -o " + out, "--attention expects 'all' or layers"},
        {"probe " + model + " -p hi --logit-lens -1 -o " + out, "--logit-lens"},
        {"probe " + model + " -p hi -n -2 -o " + out, "-n must be >= 0"},
        {"probe " + model + " -p hi --frobnicate -o " + out, "unknown argument '--frobnicate'"},
    };
    for (const Case& c : cases) {
        Result r = vkllm(c.args);
        EXPECT_EQ(r.code, 2) << c.args << ": " << r.out;
        EXPECT_NE(r.out.find(c.message), std::string::npos) << c.args << ": " << r.out;
        EXPECT_NE(r.out.find("usage: vkllm probe"), std::string::npos) << c.args << ": " << r.out;
    }
    EXPECT_FALSE(std::filesystem::exists(out));
}

// A target that cannot be written: exit 1, a message, and nothing left behind (no partial
// file, no temporary).
TEST(Probe, UnwritableOutputExits1AndLeavesNothing) {
    namespace fs = std::filesystem;
    const fs::path dir = test::temp_path("probe-unwritable");
    fs::remove_all(dir);
    fs::create_directories(dir / "taken");  // a directory where the file should go
    std::ofstream(dir / "plain") << "x";     // a file where a directory should be
    for (const fs::path& target : {dir / "taken", dir / "plain" / "out.json", dir / "missing" / "out.json"}) {
        Result r = vkllm("probe -m " + zoo("zoo-dense") + " -p hi --residual -o " + target.string());
        EXPECT_EQ(r.code, 1) << target << ": " << r.out;
        EXPECT_NE(r.out.find(target.string()), std::string::npos) << r.out;
        std::vector<std::string> entries;
        for (const auto& e : fs::directory_iterator(dir)) entries.push_back(e.path().filename().string());
        std::sort(entries.begin(), entries.end());
        EXPECT_EQ(entries, (std::vector<std::string>{"plain", "taken"})) << target;
        EXPECT_TRUE(fs::is_empty(dir / "taken"));
    }
    fs::remove_all(dir);
}

}  // namespace
}  // namespace vkllm
