// `vkllm quantize` with llama-quantize's named mixes: the type chosen for every tensor of the zoo
// models and of random models of every family, under every mix llama-quantize names (those that
// need an importance matrix as llama.cpp chooses with one), against llama.cpp's own choices (tests/cli/golden/quant_mixes.txt, made by
// scripts/make_golden_quant_mixes.py with the llama-oracle's llama-quantize-lite); then the
// command line end to end: files written in a mix, dry runs, and the mixes it refuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "gguf/gguf.h"
#include "gguf/quant_mix.h"
#include "model/families.h"
#include "test_support.h"
#include "vkllm/gguf.h"

namespace fs = std::filesystem;
using namespace vkllm;

namespace {

struct GoldenModel {
    std::string name, source;                              // source: "zoo" or "random ARGS"
    std::map<std::string, std::vector<std::string>> types;  // tensor -> type per mix
};

struct Golden {
    std::vector<std::string> mixes;
    std::vector<GoldenModel> models;
};

const Golden& golden() {
    static const Golden g = [] {
        Golden out;
        std::ifstream in(test::source_dir() + "/tests/cli/golden/quant_mixes.txt");
        if (!in) throw std::runtime_error("tests/cli/golden/quant_mixes.txt is missing");
        for (std::string line; std::getline(in, line);) {
            if (line.empty() || line[0] == '#') continue;
            std::istringstream words(line);
            std::string first;
            words >> first;
            if (first == "mixes") {
                for (std::string m; words >> m;) out.mixes.push_back(m);
            } else if (first == "model") {
                GoldenModel m;
                words >> m.name;
                std::getline(words >> std::ws, m.source);
                out.models.push_back(m);
            } else {
                std::string tensor;
                words >> tensor;
                auto& row = out.models.back().types[tensor];
                for (std::string t; words >> t;) row.push_back(t);
                if (row.size() != out.mixes.size()) throw std::runtime_error("golden row of the wrong length: " + line);
            }
        }
        return out;
    }();
    return g;
}

// The model's file: a zoo model as committed, a random one written by vkllm-random-model.
std::string model_path(const GoldenModel& m, std::string& skip) {
    if (m.source == "zoo") return test::source_dir() + "/assets/zoo/" + m.name + ".gguf";
    const std::string bin = fs::path(test::vkllm_bin()).parent_path().string() + "/vkllm-random-model";
    if (!fs::exists(bin)) {
        skip = bin + " is not built";
        return "";
    }
    const std::string path = test::temp_path("mix-" + m.name + ".gguf");
    const std::string args = m.source.substr(std::string("random ").size());
    const auto r = test::shell(bin + " --out " + path + " " + args + " 2>&1");
    if (r.code != 0) throw std::runtime_error("vkllm-random-model " + args + " failed: " + r.out);
    return path;
}

// The types a mix gives: vkllm quantize's own (the public quantize_mix, dry run), or for a
// column "MIX+imatrix" the engine's plan as llama.cpp makes it with an importance matrix
// (which vkllm quantize cannot take yet).
std::vector<QuantizedTensor> plan_of(const std::string& path, const std::string& column) {
    const size_t plus = column.find("+imatrix");
    if (plus == std::string::npos) {
        QuantizeMixOptions dry;
        dry.dry_run = true;
        return quantize_mix(path, "", column, dry).tensors;
    }
    const gguf::QuantMix* mix = gguf::find_quant_mix(column.substr(0, plus));
    if (!mix) throw std::runtime_error("no mix " + column);
    const auto file = gguf::File::open(path);
    const gguf::MixArchRules rules = model::quant_mix_rules(file->get_string("general.architecture").value_or(""));
    std::vector<QuantizedTensor> out;
    for (const gguf::TensorConversion& c : gguf::plan_mix(*file, *mix, rules, /*pure=*/false, /*with_imatrix=*/true))
        out.push_back({c.name, gguf::ggml_type_name_of(uint32_t(c.from)), gguf::ggml_type_name_of(uint32_t(c.to)), c.note});
    return out;
}

// Every mix's choice for every tensor of `m` against llama.cpp's; returns the disagreements.
std::vector<std::string> compare(const GoldenModel& m, const std::string& path) {
    std::vector<std::string> wrong;
    const Golden& g = golden();
    for (size_t k = 0; k < g.mixes.size(); ++k) {
        for (const QuantizedTensor& t : plan_of(path, g.mixes[k])) {
            const auto it = m.types.find(t.name);
            const std::string expected = it == m.types.end() ? t.from : it->second[k];
            if (expected == "-") continue;  // llama.cpp refused this mix for this model
            if (t.to != expected)
                wrong.push_back(m.name + " " + g.mixes[k] + " " + t.name + ": vkllm " + t.to + ", llama.cpp " + expected);
        }
    }
    return wrong;
}

std::string first_lines(const std::vector<std::string>& lines, size_t n) {
    std::string s;
    for (size_t i = 0; i < lines.size() && i < n; ++i) s += "\n  " + lines[i];
    return s;
}

}  // namespace

TEST(QuantizeMixes, ZooModelsTypedAsLlamaCpp) {
    size_t n = 0;
    for (const GoldenModel& m : golden().models) {
        if (m.source != "zoo") continue;
        std::string skip;
        const auto wrong = compare(m, model_path(m, skip));
        EXPECT_TRUE(wrong.empty()) << wrong.size() << " tensors differ:" << first_lines(wrong, 40);
        ++n;
    }
    EXPECT_EQ(n, 6u);
}

TEST(QuantizeMixes, RandomFamilyModelsTypedAsLlamaCpp) {
    VKLLM_REQUIRE_SHARED(shared);  // vkllm-random-model takes its vocabulary from ../shared
    size_t n = 0;
    for (const GoldenModel& m : golden().models) {
        if (m.source == "zoo") continue;
        SCOPED_TRACE(m.name + ": " + m.source);
        std::string skip;
        const std::string path = model_path(m, skip);
        if (path.empty()) GTEST_SKIP() << skip;
        const auto wrong = compare(m, path);
        EXPECT_TRUE(wrong.empty()) << wrong.size() << " tensors differ:" << first_lines(wrong, 40);
        fs::remove(path);
        ++n;
    }
    EXPECT_GE(n, 15u);
}

TEST(QuantizeMixes, CommandWritesTheMixAndRefusesWhatItCannotWrite) {
    const GoldenModel* dense = nullptr;
    for (const GoldenModel& m : golden().models)
        if (m.name == "zoo-dense") dense = &m;
    ASSERT_NE(dense, nullptr);
    const std::string in = test::source_dir() + "/assets/zoo/zoo-dense.gguf";
    const std::string vkllm = test::vkllm_bin();
    const auto& mixes = golden().mixes;
    for (const std::string mix : {"Q4_K_M", "Q3_K_L", "Q6_K"}) {
        SCOPED_TRACE(mix);
        const std::string out = test::temp_path("zoo-dense-" + mix + ".gguf");
        const auto r = test::shell(vkllm + " quantize " + in + " " + out + " " + mix + " 2>&1");
        ASSERT_EQ(r.code, 0) << r.out;
        EXPECT_NE(r.out.find(" as " + mix + "\n"), std::string::npos) << r.out;
        const size_t k = size_t(std::find(mixes.begin(), mixes.end(), mix) - mixes.begin());
        ASSERT_LT(k, mixes.size());
        const auto file = GgufFile::open(out);
        for (const auto& t : file->tensors()) {
            const auto it = dense->types.find(t.name);
            if (it != dense->types.end()) {
                EXPECT_EQ(t.type, it->second[k]) << t.name;
            }
        }
        fs::remove(out);
    }

    // A dry run lists each tensor's type and writes nothing.
    const std::string never = test::temp_path("never.gguf");
    auto r = test::shell(vkllm + " quantize " + in + " " + never + " q4_k_m --dry-run 2>&1");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("(dry run: nothing written)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("blk.2.ffn_down.weight"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(never));

    // --pure: every quantized weight in the base type (here its fallback: rows of 128).
    r = test::shell(vkllm + " quantize " + in + " " + never + " Q4_K_M --pure --dry-run 2>&1");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(r.out.find("-> Q8_0"), std::string::npos) << r.out;  // no output/ffn_down raise

    // (The i-quant and ternary mixes are written: tests/cli/test_quantize_iquant_mixes.cpp.)
    // Q2_K_S needs an importance matrix only for the tensors it puts in Q2_K; zoo-dense's rows
    // of 128 fall back to Q4_0, so it is written without one, as llama-quantize writes it (the
    // refusal: tests/cli/test_imatrix_quantize.cpp).
    r = test::shell(vkllm + " quantize " + in + " " + never + " Q2_K_S --dry-run 2>&1");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(r.out.find("needs an importance matrix"), std::string::npos) << r.out;
    // --keep-super-weights writes one type: a mix name is a usage error.
    r = test::shell(vkllm + " quantize " + in + " " + never + " Q4_K_M --keep-super-weights 2>&1");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("--keep-super-weights needs one tensor type"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(never));
}
