// `vkllm quantize` writing the i-quant and ternary types: llama-quantize's mixes that pull them in
// (IQ2_M, IQ1_M, IQ3_M, Q2_K_S, IQ4_XS, ...) are written, not refused, with llama.cpp's type for
// every tensor, and the files run.
//
// The random Llama of tests/golden/iquant (vkllm-random-model, seed 301, width 256) is quantized
// by `vkllm quantize` into each mix of that folder's models.txt (with a flat importance matrix
// where llama-quantize-lite was given IMATRIX=ones): every tensor's type must equal that of
// llama.cpp's file. The IQ2_M file then loads and generates in vkllm, and when the llama-oracle is
// installed, llama.cpp reads the same file: the logits of both engines must agree within the
// distance test_iquant_models allows (llama.cpp's own Vulkan-to-CPU distance, vulkan.txt), and
// the greedy text must be equal wherever llama.cpp's top two logits are further apart than twice
// that. A zoo model is written in IQ4_XS and IQ3_S (no importance matrix needed), with the types
// llama-quantize gives it (tests/cli/golden/quant_mixes.txt).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "gguf/gguf.h"
#include "test_support.h"
#include "vkllm/gguf.h"
#include "vkllm/imatrix.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace fs = std::filesystem;
using namespace vkllm;

namespace {

std::string golden_dir() { return test::source_dir() + "/tests/golden/iquant/"; }

std::string random_model_bin() { return fs::path(test::vkllm_bin()).parent_path().string() + "/vkllm-random-model"; }

// The F32 model tests/golden/iquant's files were quantized from.
std::string golden_source() {
    const std::string out = test::temp_path("iquant-mix-source.gguf");
    const auto r = test::shell(random_model_bin() + " --out " + out +
                               " --arch llama --seed 301 --n-embd 256 --n-ff 256 --n-layer 1 --n-head 4 --n-head-kv 2"
                               " --n-ctx 128 2>&1");
    if (r.code != 0) throw std::runtime_error("vkllm-random-model failed: " + r.out);
    return out;
}

// A flat importance matrix (every column 1) for every matrix of `model`: llama-quantize-lite's
// IMATRIX=ones.
std::string flat_imatrix(const std::string& model) {
    Imatrix m;
    m.datasets = {"flat"};
    m.chunk_count = 1;
    m.chunk_size = 1;
    const auto file = gguf::File::open(model);
    for (const auto& t : file->tensors()) {
        if (t.dims.size() != 2) continue;
        ImatrixEntry e;
        e.name = t.name;
        e.n_cols = int64_t(t.dims[0]);
        e.sums.assign(t.dims[0], 1.0f);
        e.counts = {1};
        m.entries.push_back(e);
    }
    std::sort(m.entries.begin(), m.entries.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    const std::string path = test::temp_path("flat-imatrix.gguf");
    write_imatrix(m, path);
    return path;
}

std::map<std::string, std::string> tensor_types(const std::string& path) {
    std::map<std::string, std::string> out;
    const auto file = GgufFile::open(path);
    for (const auto& t : file->tensors()) out[t.name] = t.type;
    return out;
}

// The largest llama.cpp Vulkan-to-CPU distance of tests/golden/iquant/vulkan.txt.
double logit_bound() {
    std::ifstream in(golden_dir() + "vulkan.txt");
    double bound = 0;
    std::string name;
    for (double d; in >> name >> d;) bound = std::max(bound, d);
    if (bound <= 0) throw std::runtime_error("tests/golden/iquant/vulkan.txt has no distances");
    return bound;
}

std::string oracle_home() {
    const char* env = std::getenv("ORACLE_HOME");
    return env ? env : std::string(std::getenv("HOME") ? std::getenv("HOME") : "") + "/.cache/llama-oracle";
}

std::string ids_arg(const std::vector<int32_t>& ids) {
    std::string s = "ids:";
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
    return s;
}

// llama.cpp's CPU logits of every position of `tokens` on `model` (its most exact mode).
std::vector<float> llama_logits(const std::string& model, const std::vector<int32_t>& tokens) {
    const std::string home = oracle_home(), prefix = test::temp_path("iquant-mix-llama");
    const auto r = test::shell("bash -c 'source " + home + "/env.sh && NO_FA=1 KV_F32=1 " + home + "/llama-logits " + model +
                               " none " + ids_arg(tokens) + " 0 " + prefix + " 1' 2>&1");
    if (r.code != 0) throw std::runtime_error("llama-logits failed: " + r.out);
    return test::read_f32(prefix + ".logits.f32");
}

}  // namespace

TEST(QuantizeIquantMixes, RandomModelTypedAsLlamaCppAndRunsAsLlamaCpp) {
    VKLLM_REQUIRE_SHARED(shared);  // vkllm-random-model takes its vocabulary from ../shared
    if (!fs::exists(random_model_bin())) GTEST_SKIP() << random_model_bin() << " is not built";
    const std::string source = golden_source(), imatrix = flat_imatrix(source), vkllm = test::vkllm_bin();
    std::string iq2_m;
    size_t mixes = 0;
    const auto start = std::chrono::steady_clock::now();
    for (const std::string& line : test::read_lines(golden_dir() + "models.txt")) {
        if (line.rfind("mix-", 0) != 0) continue;
        std::istringstream words(line);
        std::string name, mix;
        words >> name >> mix;
        SCOPED_TRACE(name);
        const bool flat = line.find("IMATRIX=ones") != std::string::npos;
        const std::string out = test::temp_path(name + ".gguf");
        const auto r = test::shell(vkllm + " quantize " + source + " " + out + " " + mix + (flat ? " --imatrix " + imatrix : "") + " 2>&1");
        ASSERT_EQ(r.code, 0) << r.out;
        EXPECT_EQ(tensor_types(out), tensor_types(golden_dir() + name + ".gguf"));
        if (mix == "IQ2_M") iq2_m = out;
        else fs::remove(out);
        ++mixes;
    }
    EXPECT_GE(mixes, 5u);
    std::cout << mixes << " mixes written in " << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
              << " s\n";
    ASSERT_FALSE(iq2_m.empty()) << "models.txt has no IQ2_M mix";

    // vkllm runs the file it wrote.
    auto model = Model::load(iq2_m);
    const size_t n_vocab = size_t(model->n_vocab());
    const std::vector<int32_t> prompt = test::read_ids(golden_dir() + "mix-iq2_m.tokens.txt");
    SessionOptions so;
    so.kv_cache = KvCacheType::F32;  // as llama.cpp's exact mode
    Session session(*model, so);
    std::vector<float> logits = session.eval(prompt, /*all_logits=*/true);
    ASSERT_EQ(logits.size(), prompt.size() * n_vocab);
    std::vector<int32_t> tokens = prompt, greedy;
    for (int i = 0; i < 12; ++i) {
        const auto last = logits.end() - long(n_vocab);
        greedy.push_back(int32_t(std::max_element(last, logits.end()) - last));
        tokens.push_back(greedy.back());
        const std::vector<float> step = session.eval({greedy.back()});
        logits.insert(logits.end(), step.begin(), step.end());
    }
    const std::string text = model->detokenize(greedy);
    EXPECT_FALSE(text.empty());
    std::cout << "vkllm on its IQ2_M file: \"" << text << "\"\n";

    // llama.cpp reads the same file: same logits within the bound, same greedy choices.
    if (!fs::exists(oracle_home() + "/llama-logits")) GTEST_SKIP() << "the llama-oracle is not installed";
    const std::vector<float> ref = llama_logits(iq2_m, tokens);
    ASSERT_EQ(ref.size(), logits.size());
    const double bound = logit_bound();
    double worst = 0;
    for (size_t p = 0; p < tokens.size(); ++p) {
        const std::vector<float> a(logits.begin() + long(p * n_vocab), logits.begin() + long((p + 1) * n_vocab));
        const std::vector<float> b(ref.begin() + long(p * n_vocab), ref.begin() + long((p + 1) * n_vocab));
        worst = std::max(worst, test::max_abs_diff(a, b));
        const size_t next = p + 1 - prompt.size();  // the greedy token position p chose
        if (p + 1 < prompt.size() || next >= greedy.size()) continue;
        std::vector<float> sorted = b;
        std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
        const int32_t theirs = int32_t(std::max_element(b.begin(), b.end()) - b.begin());
        if (sorted[0] - sorted[1] > 2 * bound) EXPECT_EQ(greedy[next], theirs) << "position " << p;
    }
    std::cout << "IQ2_M written by vkllm: max |logit vkllm - llama.cpp| " << worst << " (bound " << bound << ")\n";
    EXPECT_LE(worst, bound);
    fs::remove(iq2_m);
}

TEST(QuantizeIquantMixes, ZooModelWrittenInIquantMixes) {
    // llama-quantize's choices for zoo-dense (tests/cli/golden/quant_mixes.txt: "mixes ..." then
    // "model zoo-dense zoo" and one line per tensor).
    std::vector<std::string> mixes;
    std::map<std::string, std::vector<std::string>> golden;
    bool in_model = false;
    for (const std::string& line : test::read_lines(test::source_dir() + "/tests/cli/golden/quant_mixes.txt")) {
        std::istringstream words(line);
        std::string first;
        words >> first;
        if (first == "mixes") {
            for (std::string m; words >> m;) mixes.push_back(m);
        } else if (first == "model") {
            std::string name;
            words >> name;
            in_model = name == "zoo-dense";
        } else if (in_model && !first.empty() && first[0] != '#') {
            for (std::string t; words >> t;) golden[first].push_back(t);
        }
    }
    ASSERT_FALSE(golden.empty());
    const std::string in = test::source_dir() + "/assets/zoo/zoo-dense.gguf";
    for (const std::string mix : {"IQ4_XS", "IQ3_S"}) {
        SCOPED_TRACE(mix);
        const size_t k = size_t(std::find(mixes.begin(), mixes.end(), mix) - mixes.begin());
        ASSERT_LT(k, mixes.size());
        const std::string out = test::temp_path("zoo-dense-" + std::string(mix) + ".gguf");
        const auto r = test::shell(test::vkllm_bin() + " quantize " + in + " " + out + " " + mix + " 2>&1");
        ASSERT_EQ(r.code, 0) << r.out;
        for (const auto& [name, type] : tensor_types(out)) {
            const auto it = golden.find(name);
            if (it != golden.end()) EXPECT_EQ(type, it->second[k]) << name;
        }
        fs::remove(out);
    }
}
