// vkllm embed and vkllm fill-mask on the random BERT of tests/golden/bert: the written vectors
// equal llama.cpp's (CLS and mean pooling, every token's row), the similarity table, JSON,
// the output file written whole or not at all, and clear errors.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "gguf/gguf.h"
#include "test_support.h"

namespace vkllm {
namespace {

using Result = test::ShellResult;

// vkllm with `args`, stdout and stderr together.
Result vkllm(const std::string& args) { return test::shell(test::vkllm_bin() + " " + args + " 2>&1"); }

std::string golden(const std::string& f) { return test::source_dir() + "/tests/golden/bert/" + f; }
const std::string kModel = "-m " + golden("bert-f32.gguf");

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    float m = a.size() == b.size() ? 0.0f : INFINITY;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
}

TEST(EmbedCli, VectorsMatchLlamaCpp) {
    const std::string out = test::temp_path("embed_cls.f32");
    Result r = vkllm("embed " + kModel + " -f " + golden("prompts.txt") + " --pooling mean -o " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    std::vector<float> want = test::read_f32(golden("bert-f32.0.mean.embd.f32"));
    const std::vector<float> second = test::read_f32(golden("bert-f32.1.mean.embd.f32"));
    want.insert(want.end(), second.begin(), second.end());
    EXPECT_LT(max_abs_diff(test::read_f32(out), want), 1e-3f);
    EXPECT_NE(r.out.find("cosine similarity (mean pooling)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("1.0000"), std::string::npos) << r.out;  // the diagonal
    EXPECT_FALSE(std::filesystem::exists(out + ".tmp"));

    // The file's pooling (CLS) by default; every token's row with none.
    ASSERT_EQ(vkllm("embed " + kModel + " -p \"$(head -1 " + golden("prompts.txt") + ")\" -o " + out).code, 0);
    EXPECT_LT(max_abs_diff(test::read_f32(out), test::read_f32(golden("bert-f32.0.cls.embd.f32"))), 1e-3f);
    r = vkllm("embed " + kModel + " -p \"$(head -1 " + golden("prompts.txt") + ")\" --pooling none --json -o " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_LT(max_abs_diff(test::read_f32(out), test::read_f32(golden("bert-f32.0.none.embd.f32"))), 1e-3f);
    // stdout and stderr share the pipe here: the JSON is the text from its first brace to its last.
    const std::string json = r.out.substr(r.out.find('{'), r.out.rfind('}') + 1 - r.out.find('{'));
    const nlohmann::json j = nlohmann::json::parse(json);
    EXPECT_EQ(j["pooling"], "none");
    EXPECT_EQ(j["rows"], test::read_ids(golden("bert-f32.0.tokens.txt")).size());
    EXPECT_EQ(j["n_embd"], 32);
}

TEST(EmbedCli, NormalizeGivesUnitRows) {
    const std::string out = test::temp_path("embed_unit.f32");
    ASSERT_EQ(vkllm("embed " + kModel + " -p \"a cat\" --pooling mean --normalize -o " + out).code, 0);
    double sum = 0;
    for (float v : test::read_f32(out)) sum += double(v) * v;
    EXPECT_NEAR(sum, 1.0, 1e-5);
}

// Many texts: every pooled row is written, in order, and the similarity table (which grows with
// the square of the texts) is left out past 256 texts.
TEST(EmbedCli, ManyTextsAreWrittenWithoutASimilarityTable) {
    const std::string texts = test::temp_path("embed_many.txt"), out = test::temp_path("embed_many.f32"),
                      first = test::temp_path("embed_first.f32");
    {
        std::ofstream f(texts);
        for (int i = 0; i < 300; ++i) f << (i % 2 ? "a cat" : "the mat") << "\n";
    }
    Result r = vkllm("embed " + kModel + " -f " + texts + " --pooling mean -o " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(r.out.find("cosine similarity"), std::string::npos) << r.out.substr(0, 500);
    EXPECT_NE(r.out.find("no similarity table for more than 256 texts"), std::string::npos) << r.out;
    const std::vector<float> all = test::read_f32(out);
    ASSERT_EQ(all.size(), 300u * 32u);
    ASSERT_EQ(vkllm("embed " + kModel + " -p \"a cat\" --pooling mean -o " + first).code, 0);
    const std::vector<float> one = test::read_f32(first);
    const std::vector<float> row1(all.begin() + 32, all.begin() + 64);
    EXPECT_LT(max_abs_diff(row1, one), 1e-6f);
}

TEST(EmbedCli, ErrorsAreClearAndLeaveNoFile) {
    const std::string out = test::temp_path("embed_none.f32");
    std::filesystem::remove(out);
    Result r = vkllm("embed -p hello -o " + out);  // the built-in model is a decoder
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.out.find("needs an encoder"), std::string::npos) << r.out;
    EXPECT_FALSE(std::filesystem::exists(out));
    r = vkllm("embed " + kModel + " -o " + out);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("-p TEXT or -f FILE"), std::string::npos) << r.out;
    r = vkllm("embed " + kModel + " -p hi --pooling max -o " + out);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("--pooling 'max'"), std::string::npos) << r.out;
    EXPECT_FALSE(std::filesystem::exists(out));
}

// The random BERT with one value of its last layer's output-norm bias set to NaN: every row's
// value in that dimension is NaN (and nothing else), as the GPU's read-back counts it.
std::string bert_with_nan_bias(int dimension) {
    const std::string src = golden("bert-f32.gguf");
    auto file = gguf::File::open(src);
    const gguf::TensorInfo* last = nullptr;
    for (int l = 0;; ++l) {
        const gguf::TensorInfo* t = file->find_tensor("blk." + std::to_string(l) + ".layer_output_norm.bias");
        if (!t) break;
        last = t;
    }
    if (!last || last->type != gguf::TensorType::F32) return "";
    std::ifstream in(src, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string tensor(reinterpret_cast<const char*>(last->data), size_t(last->n_bytes));
    const size_t at = bytes.find(tensor);
    if (at == std::string::npos) return "";
    const float nan = std::nanf("");
    std::memcpy(&bytes[at + size_t(dimension) * 4], &nan, 4);
    const std::string out = test::temp_path("bert-nan-bias.gguf");
    std::ofstream(out, std::ios::binary) << bytes;
    return out;
}

TEST(EmbedCli, NonFiniteEmbeddingsFailWithTheRowAndDimensionAndWriteNoFile) {
    const std::string model = bert_with_nan_bias(5);
    ASSERT_FALSE(model.empty()) << "the random BERT has no F32 layer_output_norm.bias to poison";
    const std::string out = test::temp_path("embed_nan.f32");
    std::filesystem::remove(out);
    Result r = vkllm("embed -m " + model + " -p \"a cat sat\" --pooling mean -o " + out);
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("the embedding of text 1: 1 of "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("values of row 0 are NaN (first: dimension 5)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("inspect --check"), std::string::npos) << r.out;
    EXPECT_FALSE(std::filesystem::exists(out)) << "embed wrote NaN rows";
    // Every token's row: the first row is reported (every row has the NaN).
    r = vkllm("embed -m " + model + " -f " + golden("prompts.txt") + " --pooling none -o " + out);
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("values of row 0 are NaN (first: dimension 5)"), std::string::npos) << r.out;
    EXPECT_FALSE(std::filesystem::exists(out));
    // fill-mask reads every token's logits (encode_logits): the NaN reaches all of them.
    r = vkllm("fill-mask -m " + model + " -p \"The cat sat on the [MASK].\"");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("logits are NaN (first: token 0) at position 0"), std::string::npos) << r.out;
    // The clean file embeds.
    EXPECT_EQ(vkllm("embed " + kModel + " -p \"a cat sat\" -o " + out).code, 0);
}

TEST(FillMaskCli, TopKPerMask) {
    Result r = vkllm("fill-mask " + kModel + " -p \"The [MASK] sat on the [MASK].\" -k 4 --json");
    ASSERT_EQ(r.code, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j.size(), 2u);
    for (const auto& mask : j) {
        ASSERT_EQ(mask["top"].size(), 4u);
        float prev = 1.0f;
        for (const auto& g : mask["top"]) {
            EXPECT_LE(float(g["prob"]), prev);
            prev = g["prob"];
        }
    }
    EXPECT_EQ(j[0]["position"], 2);  // [CLS] the [MASK]
    r = vkllm("fill-mask " + kModel + " -p \"no mask\"");
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("no [MASK] token"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace vkllm
