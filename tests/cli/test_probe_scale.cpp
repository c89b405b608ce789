// vkllm probe on a model with many heads: every head's summary and one head's full map in a
// small JSON document, the map's NumPy sidecar, every head's top keys and thumbnail against the
// full map, tiles, the byte budget and its errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace vkllm {
namespace {

using nlohmann::json;
using Result = test::ShellResult;

Result vkllm(const std::string& args) { return test::shell(test::vkllm_bin() + " " + args + " 2>&1"); }

json read_json(const std::string& path) {
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << path;
    return json::parse(in);
}

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

constexpr int kLayers = 4, kHeads = 32;

// A random llama with 32 heads of 8 (GQA: 8 kv heads), the zoo's vocabulary, written once.
const std::string& wide_model() {
    static const std::string path = [] {
        const std::string bin = test::vkllm_bin();
        const std::string tool = bin.substr(0, bin.find_last_of('/') + 1) + "vkllm-random-model";
        const std::string p = test::temp_path("probe-wide.gguf");
        const Result r = test::shell(tool + " --out " + p + " --seed 5 --n-layer " + std::to_string(kLayers) +
                                     " --n-embd 256 --n-head " + std::to_string(kHeads) +
                                     " --n-head-kv 8 --n-ff 256 --n-ctx 1024 --vocab-from " + test::source_dir() +
                                     "/assets/zoo/zoo-dense.gguf 2>&1");
        EXPECT_EQ(r.code, 0) << r.out;
        return p;
    }();
    return path;
}

// A prompt file of a few hundred tokens.
std::string prompt_file() {
    const std::string p = test::temp_path("probe-wide-prompt.txt");
    std::ofstream out(p);
    for (int i = 0; i < 12; ++i) out << "Once upon a time, Tom and Mia counted the red boxes: one, two, three. ";
    return p;
}

TEST(ProbeScale, EveryHeadsSummaryAndOneMapStaySmall) {
    const std::string out = test::temp_path("probe-wide.json");
    const std::string prompt = prompt_file();
    Result r = vkllm("probe -m " + wide_model() + " -f " + prompt + " --attention 2:5 --attention-summary -o " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    const json doc = read_json(out);
    const int T = int(doc["tokens"].size());
    ASSERT_GT(T, 200);
    // Every layer and head, each a mean over every prompt row.
    const json& summary = doc["attention_summary"];
    ASSERT_EQ(summary.size(), size_t(kLayers * kHeads));
    for (const json& s : summary) {
        EXPECT_EQ(int(s["rows"]), T);
        const float entropy = s["entropy"], sink = s["sink_mass"], dist = s["mean_distance"], mx = s["max_prob"];
        EXPECT_GE(entropy, 0.0f);
        EXPECT_LE(entropy, std::log(float(T)) + 1e-3f);
        EXPECT_GE(sink, 0.0f);
        EXPECT_LE(sink, 1.0f + 1e-5f);
        EXPECT_GE(dist, 0.0f);
        EXPECT_LE(dist, float(T));
        EXPECT_GT(mx, 0.0f);
        EXPECT_LE(mx, 1.0f + 1e-5f);
    }
    // One head's map: n_head 1, every row summing to 1.
    ASSERT_EQ(doc["attention"].size(), 1u);
    const json& a = doc["attention"][0];
    EXPECT_EQ(int(a["layer"]), 2);
    EXPECT_EQ(int(a["head"]), 5);
    EXPECT_EQ(int(a["n_head"]), 1);
    ASSERT_EQ(a["query_pos"].size(), size_t(T));
    ASSERT_EQ(a["key_pos"].size(), size_t(T));
    ASSERT_TRUE(a["probs_npy"].is_null());
    const json& rows = a["probs"][0];
    for (size_t q = 0; q < rows.size(); q += 37) {
        double sum = 0;
        for (float p : rows[q]) sum += p;
        EXPECT_NEAR(sum, 1.0, 1e-4) << "row " << q;
    }
    EXPECT_LT(std::filesystem::file_size(out), uint64_t(10) << 20);

    // The same map in a NumPy sidecar: the JSON shrinks to the summaries and positions.
    const std::string out2 = test::temp_path("probe-wide-npy.json");
    r = vkllm("probe -m " + wide_model() + " -f " + prompt + " --attention 2:5 --attention-summary --npy -o " + out2);
    ASSERT_EQ(r.code, 0) << r.out;
    const json doc2 = read_json(out2);
    const json& a2 = doc2["attention"][0];
    ASSERT_TRUE(a2["probs"].is_null());
    const std::string npy_name = a2["probs_npy"];
    const std::string npy_path = std::filesystem::path(out2).parent_path() / npy_name;
    const std::string npy = read_bytes(npy_path);
    ASSERT_GT(npy.size(), 10u);
    EXPECT_EQ(npy.substr(0, 6), "\x93NUMPY");
    const size_t header = size_t(uint8_t(npy[8])) | size_t(uint8_t(npy[9])) << 8;
    EXPECT_EQ((10 + header) % 64, 0u);
    const std::string dict = npy.substr(10, header);
    EXPECT_NE(dict.find("'descr': '<f4'"), std::string::npos) << dict;
    EXPECT_NE(dict.find("(1, " + std::to_string(T) + ", " + std::to_string(T) + ")"), std::string::npos) << dict;
    ASSERT_EQ(npy.size(), 10 + header + size_t(T) * size_t(T) * 4);
    // The sidecar holds the values the inline JSON had.
    for (size_t q = 0; q < size_t(T); q += 41)
        for (size_t k = 0; k <= q; k += 7) {
            float v;
            std::memcpy(&v, npy.data() + 10 + header + (q * size_t(T) + k) * 4, 4);
            EXPECT_FLOAT_EQ(v, float(rows[q][k])) << q << "," << k;
        }
    EXPECT_LT(std::filesystem::file_size(out2), uint64_t(256) << 10);
    std::remove(npy_path.c_str());
    std::remove(out.c_str());
    std::remove(out2.c_str());
}

// The float32 values of a NumPy file after its header, and the header's dictionary.
std::vector<float> npy_values(const std::string& path, std::string* dict) {
    const std::string npy = read_bytes(path);
    EXPECT_EQ(npy.substr(0, 6), "\x93NUMPY") << path;
    const size_t header = size_t(uint8_t(npy[8])) | size_t(uint8_t(npy[9])) << 8;
    *dict = npy.substr(10, header);
    std::vector<float> v((npy.size() - 10 - header) / 4);
    std::memcpy(v.data(), npy.data() + 10 + header, v.size() * 4);
    return v;
}

TEST(ProbeScale, EveryHeadsTopKeysAndThumbnailAgreeWithAFullMap) {
    const std::string out = test::temp_path("probe-wide-detail.json");
    const std::string prompt = prompt_file();
    Result r = vkllm("probe -m " + wide_model() + " -f " + prompt + " -n 1 --attention 2:5 --top-keys 3 --thumbnail 16 -o " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    const json doc = read_json(out);
    const int T = int(doc["tokens"].size()) - 1;  // the prompt's
    const json& map = doc["attention"][0]["probs"][0];  // layer 2 head 5, every row of both evals
    ASSERT_EQ(doc["attention_top_k"].size(), 2u);      // the prompt and the generated token
    ASSERT_EQ(doc["attention_thumbnails"].size(), 2u);
    const json& top = doc["attention_top_k"][0];
    EXPECT_EQ(int(top["eval"]), 0);
    EXPECT_EQ(int(top["k"]), 3);
    ASSERT_EQ(top["heads"].size(), size_t(kLayers * kHeads));
    ASSERT_EQ(top["query_pos"].size(), size_t(T));
    const size_t h25 = 2 * kHeads + 5;
    EXPECT_EQ(int(top["heads"][h25]["layer"]), 2);
    EXPECT_EQ(int(top["heads"][h25]["head"]), 5);
    for (size_t q = 0; q < size_t(T); q += 13) {
        const json& keys = top["keys"][h25][q];
        const json& probs = top["probs"][h25][q];
        float best = 0;
        for (float p : map[q]) best = std::max(best, p);
        EXPECT_NEAR(float(probs[0]), best, 1e-6) << "row " << q;
        for (size_t i = 0; i < 3; ++i) {
            const int key = keys[i].get<int>();
            if (key < 0) {  // row q sees q + 1 keys
                EXPECT_GT(i, q) << "row " << q;
                EXPECT_EQ(float(probs[i]), 0.0f) << "row " << q;
                continue;
            }
            ASSERT_LE(key, int(q)) << "row " << q;
            EXPECT_NEAR(map[q][size_t(key)].get<float>(), float(probs[i]), 1e-6) << "row " << q;
            if (i > 0) EXPECT_LE(float(probs[i]), float(probs[i - 1])) << "row " << q;
        }
    }
    const json& th = doc["attention_thumbnails"][0];
    const int cell = th["cell"], rows = th["rows"], cols = th["cols"];
    EXPECT_LE(cols, 16);
    EXPECT_GT(cols, 8);  // the smallest power of two that fits
    EXPECT_EQ(rows, (T - 1) / cell + 1);
    const json& cells = th["max_prob"][h25];
    for (int rr = 0; rr < rows; ++rr)
        for (int c = 0; c < cols; ++c) {
            float want = 0;
            for (int q = rr * cell; q < std::min(T, (rr + 1) * cell); ++q)
                for (int k = c * cell; k < std::min(int(map[q].size()), (c + 1) * cell); ++k) want = std::max(want, float(map[q][k]));
            EXPECT_NEAR(float(cells[rr][c]), want, 1e-6) << "cell " << rr << "," << c;
        }
    EXPECT_EQ(int(doc["attention_thumbnails"][1]["rows"]), 1);  // the generated token's row
    EXPECT_LT(std::filesystem::file_size(out), uint64_t(10) << 20);

    // In NumPy files: the same values.
    const std::string out2 = test::temp_path("probe-wide-detail-npy.json");
    r = vkllm("probe -m " + wide_model() + " -f " + prompt + " --top-keys 3 --thumbnail 16 --npy -o " + out2);
    ASSERT_EQ(r.code, 0) << r.out;
    const json doc2 = read_json(out2);
    const json& top2 = doc2["attention_top_k"][0];
    ASSERT_TRUE(top2["keys"].is_null());
    const std::string dir = std::filesystem::path(out2).parent_path();
    std::string dict;
    const std::vector<float> keys = npy_values(dir + "/" + std::string(top2["keys_npy"]), &dict);
    EXPECT_NE(dict.find("(" + std::to_string(kLayers * kHeads) + ", " + std::to_string(T) + ", 3)"), std::string::npos) << dict;
    ASSERT_EQ(keys.size(), size_t(kLayers * kHeads) * size_t(T) * 3);
    for (size_t q = 0; q < size_t(T); q += 13)
        EXPECT_EQ(int(keys[(h25 * size_t(T) + q) * 3]), int(top["keys"][h25][q][0])) << "row " << q;
    const json& th2 = doc2["attention_thumbnails"][0];
    ASSERT_TRUE(th2["max_prob"].is_null());
    const std::vector<float> cells2 = npy_values(dir + "/" + std::string(th2["max_prob_npy"]), &dict);
    ASSERT_EQ(cells2.size(), size_t(kLayers * kHeads) * size_t(rows) * size_t(cols));
    EXPECT_FLOAT_EQ(cells2[(h25 * size_t(rows) + size_t(rows - 1)) * size_t(cols)], float(cells[rows - 1][0]));
    for (const char* f : {"keys_npy", "probs_npy"}) std::remove((dir + "/" + std::string(top2[f])).c_str());
    std::remove((dir + "/" + std::string(th2["max_prob_npy"])).c_str());
    std::remove(out.c_str());
    std::remove(out2.c_str());
}

TEST(ProbeScale, TilesAndTheBudget) {
    const std::string out = test::temp_path("probe-wide-tile.json");
    const std::string prompt = prompt_file();
    Result r = vkllm("probe -m " + wide_model() + " -f " + prompt + " --attention 0:31,3:0 --tile 100-119,90-109 -o " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    const json doc = read_json(out);
    ASSERT_EQ(doc["attention"].size(), 2u);
    for (const json& a : doc["attention"]) {
        std::vector<int> q = a["query_pos"], k = a["key_pos"];
        ASSERT_EQ(q.size(), 20u);
        ASSERT_EQ(k.size(), 20u);
        EXPECT_EQ(q.front(), 100);
        EXPECT_EQ(k.front(), 90);
        EXPECT_EQ(a["probs"][0].size(), 20u);
    }
    EXPECT_TRUE(doc["attention_summary"].empty());
    // Every layer's whole map is over a small budget: an error that says so, and no file.
    const std::string over = test::temp_path("probe-wide-over.json");
    std::remove(over.c_str());
    r = vkllm("probe -m " + wide_model() + " -f " + prompt + " --attention all --max-bytes 4M -o " + over);
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("over the budget of 4.0 MiB"), std::string::npos) << r.out;
    EXPECT_FALSE(std::filesystem::exists(over));
    struct Case {
        std::string args, message;
    };
    const std::string m = "probe -m " + wide_model() + " -p hi -o " + over;
    for (const Case& c : std::vector<Case>{
             {m + " --attention 2:32", "head 32 is out of range (layer 2 has 32 heads)"},
             {m + " --attention 4:0", "layer 4 is out of range"},
             {m + " --attention 1:x", "is not a number"},
             {m + " --attention 1", "--tile needs --attention L:H"},
             {m + " --attention 1:1 --tile 5-3,all", "ends before it starts"},
             {m + " --attention 1:1 --tile 5", "--tile expects Q0-Q1,K0-K1"},
             {m + " --max-bytes 12X", "--max-bytes expects a positive size"},
             {m + " --top-keys 17", "--top-keys: at most 16"},
             {m + " --thumbnail 257", "--thumbnail: at most 256"},
             {m + " -f " + prompt, "not both"},
         }) {
        const std::string args = c.message.find("--tile needs") != std::string::npos ? c.args + " --tile all,all" : c.args;
        r = vkllm(args);
        EXPECT_EQ(r.code, 2) << args << ": " << r.out;
        EXPECT_NE(r.out.find(c.message), std::string::npos) << args << ": " << r.out;
    }
    std::remove(out.c_str());
}

}  // namespace
}  // namespace vkllm
