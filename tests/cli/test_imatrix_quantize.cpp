// `vkllm quantize --imatrix`: a random Llama of width 256 is refused in IQ2_XXS without an
// importance matrix (llama-quantize refuses it too) and written with one; the matrix's weighting
// shows in the file (its weighted error below that of a flat matrix's file) and in its metadata
// (llama-quantize's quantize.imatrix.* keys). When the llama-oracle is installed, llama.cpp's own
// quantizer reads the matrix vkllm wrote (tools/imatrix_oracle's llama-quantize-imatrix).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "test_support.h"
#include "vkllm/imatrix.h"

namespace fs = std::filesystem;
using namespace vkllm;

namespace {

std::string random_llama() {
    const std::string tool = fs::path(test::vkllm_bin()).parent_path().string() + "/vkllm-random-model";
    const std::string out = test::temp_path("imatrix-quantize-source.gguf");
    const auto r = test::shell(tool + " --out " + out +
                               " --arch llama --seed 17 --n-embd 256 --n-ff 512 --n-layer 1 --n-head 4 --n-head-kv 2"
                               " --n-ctx 64 2>&1");
    if (r.code != 0) throw std::runtime_error("vkllm-random-model failed: " + r.out);
    return out;
}

// A matrix for every 2-D weight of `model`: activations whose columns differ in scale by up to
// 100x (scaled per column by `scale`), or all alike (flat).
std::string imatrix_for(const std::string& model, const std::string& name, bool flat) {
    Imatrix m;
    m.datasets = {name};
    m.chunk_count = 1;
    m.chunk_size = 8;
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const auto file = gguf::File::open(model);
    for (const auto& t : file->tensors()) {
        if (t.dims.size() != 2 || t.name == "token_embd.weight") continue;
        const int64_t n = int64_t(t.dims[0]);
        std::vector<float> x(size_t(8 * n));
        for (size_t i = 0; i < x.size(); ++i)
            x[i] = flat ? 1.0f : normal(rng) * std::pow(10.0f, float((i % size_t(n)) * 7 % 3));
        m.accumulate(t.name, x.data(), 8, n);
    }
    const std::string path = test::temp_path(name);
    write_imatrix(m, path);
    return path;
}

// Sum over the quantized weights that the matrix covers of imp_j (W - Q)^2.
double weighted_error(const std::string& f32, const std::string& quantized, const Imatrix& m) {
    const auto a = gguf::File::open(f32), b = gguf::File::open(quantized);
    double e = 0;
    for (const ImatrixEntry& entry : m.entries) {
        const gguf::TensorInfo* q = b->find_tensor(entry.name);
        if (!q || q->type == gguf::TensorType::F32) continue;
        const std::vector<float> w = gguf::dequantize_tensor(*a->find_tensor(entry.name));
        const std::vector<float> v = gguf::dequantize_tensor(*q);
        const std::vector<float> imp = entry.importance();
        for (size_t i = 0; i < w.size(); ++i) e += double(imp[i % imp.size()]) * double(w[i] - v[i]) * double(w[i] - v[i]);
    }
    return e;
}

}  // namespace

TEST(ImatrixQuantize, RefusedWithoutWrittenWithAndWeighted) {
    const std::string vkllm = test::vkllm_bin(), in = random_llama();
    const std::string skewed = imatrix_for(in, "skewed.imatrix.gguf", false);
    const std::string flat = imatrix_for(in, "flat.imatrix.gguf", true);
    const std::string out = test::temp_path("imatrix-iq2_xxs.gguf"), out_flat = test::temp_path("imatrix-iq2_xxs-flat.gguf");

    auto r = test::shell(vkllm + " quantize " + in + " " + out + " IQ2_XXS 2>&1");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("needs an importance matrix"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--imatrix FILE"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(out));
    r = test::shell(vkllm + " quantize " + in + " " + out + " IQ2_XXS --imatrix " + test::temp_path("none.gguf") + " 2>&1");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("none.gguf"), std::string::npos) << r.out;

    r = test::shell(vkllm + " quantize " + in + " " + out + " IQ2_XXS --imatrix " + skewed + " 2>&1");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("with the importance matrix"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("-> IQ2_XXS"), std::string::npos) << r.out;
    r = test::shell(vkllm + " quantize " + in + " " + out_flat + " IQ2_XXS --imatrix " + flat + " 2>&1");
    ASSERT_EQ(r.code, 0) << r.out;
    const auto file = gguf::File::open(out);
    EXPECT_EQ(file->get_string("quantize.imatrix.file").value_or(""), skewed);
    EXPECT_EQ(file->get_string("quantize.imatrix.dataset").value_or(""), "skewed.imatrix.gguf");
    EXPECT_GT(file->get_int("quantize.imatrix.entries_count").value_or(0), 4);
    // Weighted by the skewed matrix, its file errs less than the flat one's.
    const Imatrix m = read_imatrix(skewed);
    const double with = weighted_error(in, out, m), without = weighted_error(in, out_flat, m);
    EXPECT_LT(with, 0.95 * without) << "weighted error with the matrix " << with << ", flat " << without;

    // llama.cpp's quantizer reads the matrix vkllm wrote.
    const auto shared = test::shared_dir();
    if (!shared || !fs::exists(*shared + "/tools/llama-oracle/setup.sh")) GTEST_SKIP() << "no llama-oracle: llama.cpp's side skipped";
    const auto built = test::shell(test::source_dir() + "/tools/imatrix_oracle/build.sh " +
                                   test::temp_path("imatrix-oracle") + " 2>&1");
    ASSERT_EQ(built.code, 0) << built.out;
    const std::string tool = test::temp_path("imatrix-oracle") + "/llama-quantize-imatrix";
    r = test::shell(tool + " " + in + " " + test::temp_path("imatrix-llama.gguf") + " IQ2_XXS " + skewed + " 1 2>&1");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(r.out.find("did not find weights for blk."), std::string::npos) << r.out;  // every layer weight matched
}
