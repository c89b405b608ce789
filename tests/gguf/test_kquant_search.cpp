// The K-quant encoders without an importance vector search each group's scale (and minimum) as
// ggml's reference quantizers do (make_qkx2_quants for Q2_K/Q4_K/Q5_K, make_q3_quants and
// make_qx_quants for Q3_K/Q6_K): their round-trip error is within 1.02x of ggml's own quantizer
// (the llama-oracle's libggml-base, what llama-quantize-lite runs) on real weights (zoo-deep's
// 256-wide ffn_down matrices) and on Gaussian rows with outliers, and it is below the error of
// the min/max group scales they replaced.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "test_support.h"

using namespace vkllm::gguf;

namespace {

using QuantizeChunk = size_t (*)(int type, const float* src, void* dst, int64_t start, int64_t n_rows, int64_t n_per_row,
                                 const float* imatrix);
QuantizeChunk ggml_quantizer() {
    const char* home_env = std::getenv("ORACLE_HOME");
    const std::string home =
        home_env ? home_env : std::string(std::getenv("HOME") ? std::getenv("HOME") : "") + "/.cache/llama-oracle";
    void* lib = dlopen((home + "/lib/libggml-base.so").c_str(), RTLD_NOW | RTLD_LOCAL);
    return lib ? reinterpret_cast<QuantizeChunk>(dlsym(lib, "ggml_quantize_chunk")) : nullptr;
}

double squared_error(const std::vector<float>& y, const std::vector<float>& x) {
    double s = 0.0;
    for (size_t i = 0; i < x.size(); ++i) s += double(y[i] - x[i]) * double(y[i] - x[i]);
    return s;
}

// Gaussian rows of 512 with every 97th weight 8x larger, as real matrices have outliers.
std::vector<float> gaussian_rows(size_t n_rows, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> gauss(0.0f, 0.02f);
    std::vector<float> x(n_rows * 512);
    for (float& v : x) v = gauss(rng);
    for (size_t i = 0; i < x.size(); i += 97) x[i] *= 8.0f;
    return x;
}

// The error of min/max group scales (the encoders' former method), for Q4_K: scale
// (max - min) / 15 and minimum -min per group of 32, as ggml's formats store them.
double minmax_q4k_error(const std::vector<float>& x) {
    double s = 0.0;
    for (size_t g = 0; g < x.size(); g += 32) {
        float lo = 0.0f, hi = -1e30f;
        for (size_t i = g; i < g + 32; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
        const float d = (hi - lo) / 15.0f;
        for (size_t i = g; i < g + 32; ++i) {
            const float q = d > 0 ? std::clamp(std::nearbyint((x[i] - lo) / d), 0.0f, 15.0f) : 0.0f;
            s += double(d * q + lo - x[i]) * double(d * q + lo - x[i]);
        }
    }
    return s;
}

}  // namespace

TEST(KquantSearch, RoundTripWithinTwoPercentOfGgml) {
    const QuantizeChunk ggml = ggml_quantizer();
    if (!ggml) GTEST_SKIP() << "libggml-base from the llama-oracle is not installed";
    const auto model = File::open(vkllm::test::source_dir() + "/assets/zoo/zoo-deep.gguf");
    std::vector<std::pair<std::string, std::vector<float>>> sets;
    for (int l = 0; l < 8; ++l) {
        const std::string name = "blk." + std::to_string(l) + ".ffn_down.weight";
        const TensorInfo* t = model->find_tensor(name);
        ASSERT_NE(t, nullptr) << name;
        ASSERT_EQ(t->dims[0] % 256, 0u) << name;
        sets.push_back({name, dequantize_tensor(*t)});
    }
    sets.push_back({"gaussian rows", gaussian_rows(16, 3)});
    const int64_t row = 256;
    for (TensorType type : {TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
        SCOPED_TRACE(type_traits(type)->name);
        double mine_all = 0, theirs_all = 0;
        for (const auto& [name, x] : sets) {
            std::vector<uint8_t> theirs(row_size(type, x.size()));
            ggml(int(type), x.data(), theirs.data(), 0, int64_t(x.size()) / row, row, nullptr);
            const double theirs_err = squared_error(dequantize(type, theirs.data(), x.size()), x);
            const double mine = squared_error(dequantize(type, quantize(type, x.data(), x.size(), {}).data(), x.size()), x);
            // RMS within 1.02x: squared errors within 1.02^2.
            EXPECT_LE(mine, 1.0404 * theirs_err) << name << ": RMS ratio " << std::sqrt(mine / theirs_err);
            mine_all += mine;
            theirs_all += theirs_err;
            if (type == TensorType::Q4_K) {
                EXPECT_LT(mine, minmax_q4k_error(x)) << name;
            }
        }
        std::printf("%s: RMS error %.4fx ggml's over the sets\n", type_traits(type)->name, std::sqrt(mine_all / theirs_all));
    }
}
