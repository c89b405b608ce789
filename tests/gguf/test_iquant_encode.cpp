// The i-quant and ternary encoders (quantize / quantize_row for IQ4_NL ... TQ2_0), and every
// encoder's importance vector, judged by what matters: the round-trip error through the existing
// decoders, against llama.cpp's own quantizer on the same weights.
//
// Realistic rows: the weights of tests/golden/iquant's random Llama (re-made here by
// vkllm-random-model, seed 301, F32), whose llama.cpp files of every type are in that folder
// (llama-quantize-lite; IMATRIX=ones where models.txt says so); each tensor's RMS error must be
// within 1.1x of llama.cpp's file's. Random rows: when the llama-oracle is installed, ggml's own
// quantizer (ggml_quantize_chunk, dlopen'ed from libggml-base) on the same rows gives the
// reference error, with and without a random importance vector (the 32-element and K-quant types
// with one); otherwise those cases are skipped. Then: an importance vector lowers the error it
// weights, for every type that searches its scales, and bad importance vectors are refused.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <map>
#include <random>

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "test_support.h"

using namespace vkllm::gguf;
namespace fs = std::filesystem;

namespace {

struct EncodedType {
    const char* name;
    TensorType type;     // its number is ggml's too
    bool needs_imatrix;  // llama.cpp writes it only with an importance matrix
    bool ggml_quick;     // ggml builds its search tables for it in about a second or less (single-threaded)
};

const EncodedType kTypes[] = {
    {"IQ4_NL", TensorType::IQ4_NL, false, true},   {"IQ4_XS", TensorType::IQ4_XS, false, true},
    {"IQ3_XXS", TensorType::IQ3_XXS, false, true}, {"IQ3_S", TensorType::IQ3_S, false, true},
    {"IQ2_XXS", TensorType::IQ2_XXS, true, true},  {"IQ2_XS", TensorType::IQ2_XS, true, false},
    {"IQ2_S", TensorType::IQ2_S, false, false},    {"IQ1_S", TensorType::IQ1_S, true, false},
    {"IQ1_M", TensorType::IQ1_M, false, false},    {"TQ1_0", TensorType::TQ1_0, false, true},
    {"TQ2_0", TensorType::TQ2_0, false, true},
};

// The other types whose encoders search their scales with an importance vector.
const TensorType kWeightedBlockTypes[] = {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q2_K,
                                          TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};

double rms_error(const std::vector<float>& a, const float* b, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; ++i) s += double(a[i] - b[i]) * double(a[i] - b[i]);
    return std::sqrt(s / double(n));
}

// Round trip through vkllm's encoder and decoder.
std::vector<float> round_trip(TensorType t, const float* x, size_t n, std::span<const float> importance = {}) {
    const std::vector<uint8_t> bytes = quantize(t, x, n, importance);
    return dequantize(t, bytes.data(), n);
}

// The F32 model the golden files were quantized from.
std::string golden_source() {
    static const std::string path = [] {
        const std::string bin = fs::path(vkllm::test::vkllm_bin()).parent_path().string() + "/vkllm-random-model";
        if (!fs::exists(bin)) return std::string();
        const std::string out = vkllm::test::temp_path("iquant-source-301.gguf");
        const auto r = vkllm::test::shell(bin + " --out " + out +
                                          " --arch llama --seed 301 --n-embd 256 --n-ff 256 --n-layer 1 --n-head 4"
                                          " --n-head-kv 2 --n-ctx 128 2>&1");
        if (r.code != 0) throw std::runtime_error("vkllm-random-model failed: " + r.out);
        return out;
    }();
    return path;
}

}  // namespace

TEST(IquantEncode, ModelTensorsAsCloseAsLlamaCppsFiles) {
    VKLLM_REQUIRE_SHARED(shared);  // vkllm-random-model takes its vocabulary from ../shared
    const std::string source_path = golden_source();
    if (source_path.empty()) GTEST_SKIP() << "vkllm-random-model is not built";
    const auto source = File::open(source_path);
    const std::string dir = vkllm::test::source_dir() + "/tests/golden/iquant/";
    std::map<TensorType, size_t> compared;
    // models.txt: name, llama-quantize type, environment (IMATRIX=ones: a flat importance matrix).
    for (const std::string& line : vkllm::test::read_lines(dir + "models.txt")) {
        if (line.empty() || line[0] == '#') continue;
        const std::string name = line.substr(0, line.find(' '));
        const bool flat = line.find("IMATRIX=ones") != std::string::npos;
        SCOPED_TRACE(name);
        const auto golden = File::open(dir + name + ".gguf");
        for (const TensorInfo& g : golden->tensors()) {
            const auto t = std::find_if(std::begin(kTypes), std::end(kTypes), [&](const EncodedType& e) { return e.type == g.type; });
            // The smaller matrices only (the others are drawn alike), to keep the test quick.
            if (t == std::end(kTypes) || g.n_elements() > 65536) continue;
            const TensorInfo* src = source->find_tensor(g.name);
            ASSERT_NE(src, nullptr) << g.name;
            ASSERT_EQ(src->type, TensorType::F32) << g.name;
            const std::vector<float> x = dequantize_tensor(*src);
            const std::vector<float> ones(src->row_length(), 1.0f);
            const std::vector<float> mine = round_trip(g.type, x.data(), x.size(), flat ? std::span<const float>(ones) : std::span<const float>{});
            const double err_mine = rms_error(mine, x.data(), x.size());
            const double err_llama = rms_error(dequantize_tensor(g), x.data(), x.size());
            EXPECT_LE(err_mine, 1.1 * err_llama) << g.name << " in " << t->name << ": vkllm " << err_mine << ", llama.cpp " << err_llama;
            if (compared[g.type]++ == 0)
                std::printf("%-8s %-24s RMS error: vkllm %.6f, llama.cpp %.6f (x%.3f)\n", t->name, g.name.c_str(), err_mine, err_llama,
                            err_mine / err_llama);
        }
    }
    for (const EncodedType& t : kTypes) EXPECT_GT(compared[t.type], 0u) << "no " << t.name << " tensor in the golden files";
}

// IQ1_S and IQ1_M follow llama.cpp's encoder step by step, down to the factors it multiplies the
// block scale by (1.125, 1.1125): a least-squares block scale instead gives a lower RMS error but
// weights shrunk towards zero, and worse perplexity (docs/imatrix.md). So their files must match
// llama.cpp's block for block, not just come as close in error; a few blocks may differ where a
// float sum's order decides a rounding.
TEST(IquantEncode, Iq1BlocksMatchLlamaCppsFiles) {
    VKLLM_REQUIRE_SHARED(shared);
    const std::string source_path = golden_source();
    if (source_path.empty()) GTEST_SKIP() << "vkllm-random-model is not built";
    const auto source = File::open(source_path);
    const std::string dir = vkllm::test::source_dir() + "/tests/golden/iquant/";
    for (const char* name : {"iq1_s", "iq1_m"}) {  // both written with IMATRIX=ones (models.txt)
        SCOPED_TRACE(name);
        const auto golden = File::open(dir + name + ".gguf");
        size_t blocks = 0, same = 0;
        for (const TensorInfo& g : golden->tensors()) {
            if (g.type != TensorType::IQ1_S && g.type != TensorType::IQ1_M) continue;
            const TensorInfo* src = source->find_tensor(g.name);
            ASSERT_NE(src, nullptr) << g.name;
            const std::vector<float> x = dequantize_tensor(*src);
            const std::vector<float> ones(src->row_length(), 1.0f);
            const std::vector<uint8_t> mine = quantize(g.type, x.data(), x.size(), ones);
            const std::span<const uint8_t> theirs(g.data, g.n_bytes);
            ASSERT_EQ(mine.size(), theirs.size()) << g.name;
            const size_t block_bytes = row_size(g.type, 256);
            for (size_t b = 0; b < mine.size(); b += block_bytes, ++blocks)
                same += std::equal(mine.begin() + b, mine.begin() + b + block_bytes, theirs.begin() + b);
        }
        std::printf("%s: %zu of %zu blocks byte-identical to llama.cpp's\n", name, same, blocks);
        ASSERT_GT(blocks, 0u);
        EXPECT_GE(double(same), 0.99 * double(blocks)) << same << " of " << blocks << " blocks as llama.cpp's";
    }
}

namespace {

// ggml's own quantizer, from the llama-oracle's libggml-base (nullptr when not installed).
using QuantizeChunk = size_t (*)(int type, const float* src, void* dst, int64_t start, int64_t n_rows, int64_t n_per_row,
                                 const float* imatrix);
QuantizeChunk ggml_quantizer() {
    static QuantizeChunk fn = []() -> QuantizeChunk {
        const char* home_env = std::getenv("ORACLE_HOME");
        const std::string home =
            home_env ? home_env : std::string(std::getenv("HOME") ? std::getenv("HOME") : "") + "/.cache/llama-oracle";
        void* lib = dlopen((home + "/lib/libggml-base.so").c_str(), RTLD_NOW | RTLD_LOCAL);
        return lib ? reinterpret_cast<QuantizeChunk>(dlsym(lib, "ggml_quantize_chunk")) : nullptr;
    }();
    return fn;
}

// Importance-weighted squared error per element.
double weighted_error(const std::vector<float>& y, const std::vector<float>& x, const std::vector<float>& importance) {
    double s = 0.0;
    for (size_t i = 0; i < x.size(); ++i) s += double(importance[i % importance.size()]) * double(y[i] - x[i]) * double(y[i] - x[i]);
    return s / double(x.size());
}

// Rows of 512: Gaussian, with a few large outliers as real weight matrices have, some rows
// scaled far down, and one block of zeros.
std::vector<float> test_rows(size_t n_rows, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> gauss(0.0f, 0.02f);
    std::vector<float> x(n_rows * 512);
    for (float& v : x) v = gauss(rng);
    for (size_t i = 0; i < x.size(); i += 97) x[i] *= 8.0f;
    for (size_t c = 0; c < 512; ++c) x[3 * 512 + c] *= 1e-4f;
    std::fill(x.begin() + 5 * 512, x.begin() + 5 * 512 + 256, 0.0f);
    return x;
}

}  // namespace

TEST(IquantEncode, RandomRowsAsCloseAsGgml) {
    const QuantizeChunk ggml = ggml_quantizer();
    if (!ggml) GTEST_SKIP() << "libggml-base from the llama-oracle is not installed";
    const size_t n_rows = 8;
    const std::vector<float> x = test_rows(n_rows, 7);
    std::vector<float> importance(512);
    std::mt19937 rng(11);
    for (float& w : importance) w = std::exponential_distribution<float>(1.0f)(rng);
    for (const EncodedType& t : kTypes) {
        // ggml builds the IQ1 and larger IQ2 grids' tables in 5-25 s: those types are judged on
        // the golden files above only.
        if (!t.ggml_quick) continue;
        SCOPED_TRACE(t.name);
        // Without an importance vector (a flat one for the types llama.cpp refuses without),
        // then with a random one given to both.
        const std::vector<float> ones(512, 1.0f);
        const std::vector<float>* default_importance = t.needs_imatrix ? &ones : nullptr;
        const std::vector<float>* const cases[] = {default_importance, &importance};
        for (const std::vector<float>* imp : cases) {
            std::vector<uint8_t> theirs(row_size(t.type, x.size()));
            ggml(int(t.type), x.data(), theirs.data(), 0, int64_t(n_rows), 512, imp ? imp->data() : nullptr);
            const std::vector<float> y_theirs = dequantize(t.type, theirs.data(), x.size());
            const std::vector<float> y_mine = round_trip(t.type, x.data(), x.size(), imp ? std::span<const float>(*imp) : std::span<const float>{});
            const std::vector<float>& judge = imp ? *imp : ones;
            const double mine = weighted_error(y_mine, x, judge), theirs_err = weighted_error(y_theirs, x, judge);
            EXPECT_LE(mine, 1.21 * theirs_err) << (imp == &importance ? "random importance" : "default weighting") << ": vkllm "
                                               << mine << ", ggml " << theirs_err;  // 1.21 = 1.1^2: squared errors
            for (size_t i = 5 * 512; i < 5 * 512 + 256; ++i) ASSERT_EQ(y_mine[i], 0.0f) << "the zero block decodes to zeros";
        }
    }
}

// The 32-element and K-quant types with an importance vector: their group scales are searched
// as llama.cpp's are (without one, tests/gguf/test_kquant_search.cpp compares them).
TEST(IquantEncode, WeightedBlockTypesAsCloseAsGgml) {
    const QuantizeChunk ggml = ggml_quantizer();
    if (!ggml) GTEST_SKIP() << "libggml-base from the llama-oracle is not installed";
    const size_t n_rows = 8;
    const std::vector<float> x = test_rows(n_rows, 5);
    std::vector<float> importance(512);
    std::mt19937 rng(13);
    for (float& w : importance) w = std::exponential_distribution<float>(1.0f)(rng);
    for (TensorType t : kWeightedBlockTypes) {
        SCOPED_TRACE(type_traits(t)->name);
        std::vector<uint8_t> theirs(row_size(t, x.size()));
        ggml(int(t), x.data(), theirs.data(), 0, int64_t(n_rows), 512, importance.data());
        const double mine = weighted_error(round_trip(t, x.data(), x.size(), importance), x, importance);
        const double theirs_err = weighted_error(dequantize(t, theirs.data(), x.size()), x, importance);
        EXPECT_LE(mine, 1.21 * theirs_err) << "vkllm " << mine << ", ggml " << theirs_err;
    }
}

TEST(IquantEncode, ImportanceLowersTheErrorItWeights) {
    const std::vector<float> x = test_rows(4, 3);
    // Half the columns matter 100 times more than the others.
    std::vector<float> importance(512);
    for (size_t c = 0; c < 512; ++c) importance[c] = (c / 8) % 2 ? 100.0f : 1.0f;
    std::vector<TensorType> types(std::begin(kWeightedBlockTypes), std::end(kWeightedBlockTypes));
    for (const EncodedType& t : kTypes) types.push_back(t.type);
    for (TensorType t : types) {
        SCOPED_TRACE(type_traits(t)->name);
        const double plain = weighted_error(round_trip(t, x.data(), x.size()), x, importance);
        const double weighted = weighted_error(round_trip(t, x.data(), x.size(), importance), x, importance);
        EXPECT_LT(weighted, 0.97 * plain) << "plain " << plain << ", with importance " << weighted;
    }
}

TEST(IquantEncode, RefusesImportanceThatDoesNotFit) {
    const std::vector<float> x(1024, 0.5f);
    std::vector<float> importance(512, 1.0f);
    EXPECT_THROW(quantize(TensorType::IQ2_XXS, x.data(), x.size(), std::span<const float>(importance.data(), 384)), std::invalid_argument);
    EXPECT_THROW(quantize(TensorType::IQ2_XXS, x.data(), 768, importance), std::invalid_argument);  // not whole rows
    importance[7] = -1.0f;
    EXPECT_THROW(quantize(TensorType::IQ4_NL, x.data(), x.size(), importance), std::invalid_argument);
    importance[7] = NAN;
    EXPECT_THROW(quantize(TensorType::TQ1_0, x.data(), x.size(), importance), std::invalid_argument);
    std::vector<uint8_t> out(row_size(TensorType::IQ3_S, 512));
    EXPECT_THROW(quantize_row(TensorType::IQ3_S, x.data(), out.data(), 512, std::span<const float>(importance.data(), 256)),
                 std::invalid_argument);
    EXPECT_TRUE(can_quantize(TensorType::IQ1_M));
    EXPECT_FALSE(can_quantize(TensorType::Q8_K));
}
