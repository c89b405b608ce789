// Element formats: fp16/bf16 conversion, quantize->dequantize round trips with per-type error
// bounds, agreement with llama.cpp's files and (when the oracle is installed) with ggml itself, and
// IQ4_NL/IQ4_XS decoding against gguf-py's reference dequantizers.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "test_support.h"

using namespace vkllm::gguf;
using vkllm::test::nmse;
using vkllm::test::random_floats;

namespace {

struct QuantCase {
    TensorType type;
    double max_nmse;  // on uniform [-1, 1) data; about twice the RTN error of the format
};

// Expected NMSE of round-to-nearest with step s on uniform [-1,1) data is (s^2/12) / (1/3):
// Q8_0 s=1/127 -> 1.6e-5, Q4_0 s=1/8 -> 3.9e-3, Q6_K s~1/32 -> 2.4e-4, ...
const QuantCase kCases[] = {
    {TensorType::F32, 0.0},     {TensorType::F16, 1e-7},    {TensorType::BF16, 2e-5},
    {TensorType::Q8_0, 3.5e-5}, {TensorType::Q4_0, 8e-3},   {TensorType::Q4_1, 1e-2},
    {TensorType::Q5_0, 2e-3},   {TensorType::Q5_1, 2.5e-3}, {TensorType::Q2_K, 0.15},
    {TensorType::Q3_K, 3.5e-2}, {TensorType::Q4_K, 1e-2},   {TensorType::Q5_K, 2.5e-3},
    {TensorType::Q6_K, 6e-4},   {TensorType::MXFP4, 3e-2},
};

std::string name_of(TensorType t) { return type_traits(t)->name; }

}  // namespace

TEST(Fp16, EveryHalfRoundTripsThroughFloat) {
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float f = fp16_to_fp32(uint16_t(h));
        if (std::isnan(f)) {
            EXPECT_EQ(h & 0x7c00, 0x7c00u);
            EXPECT_TRUE(std::isnan(fp16_to_fp32(fp32_to_fp16(f))));
            continue;
        }
        ASSERT_EQ(fp32_to_fp16(f), h) << "half 0x" << std::hex << h;
    }
}

TEST(Fp16, RoundsToNearestEven) {
    EXPECT_EQ(fp16_to_fp32(0x3c00), 1.0f);
    EXPECT_EQ(fp16_to_fp32(0xc000), -2.0f);
    EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7bff);
    EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7bff);
    EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);  // the tie rounds up to inf
    EXPECT_EQ(fp32_to_fp16(-1e10f), 0xfc00);
    EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie -> even
    EXPECT_EQ(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie -> even
    EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);             // tie -> even (zero)
    EXPECT_EQ(fp32_to_fp16(std::ldexp(1.5f, -25)), 0x0001);
    EXPECT_EQ(fp32_to_fp16(std::ldexp(3.0f, -25)), 0x0002);             // 1.5 ulp tie -> even
    EXPECT_EQ(fp32_to_fp16(std::ldexp(1023.5f, -24)), 0x0400);          // subnormal rounds up to normal
    EXPECT_EQ(fp32_to_fp16(1e-30f), 0x0000);
    EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
    EXPECT_TRUE(std::isnan(fp16_to_fp32(fp32_to_fp16(NAN))));
    EXPECT_TRUE(std::isinf(fp16_to_fp32(fp32_to_fp16(INFINITY))));
}

TEST(Fp16, MatchesTheCompilersHalfType) {
#if defined(__FLT16_MAX__)
    std::mt19937 rng(7);
    for (int i = 0; i < 2000000; ++i) {
        const uint32_t bits = rng();
        float f;
        std::memcpy(&f, &bits, 4);
        if (std::isnan(f)) continue;
        const _Float16 ref = static_cast<_Float16>(f);
        uint16_t ref_bits;
        std::memcpy(&ref_bits, &ref, 2);
        ASSERT_EQ(fp32_to_fp16(f), ref_bits) << f;
        ASSERT_EQ(fp16_to_fp32(ref_bits), static_cast<float>(ref));
    }
#else
    GTEST_SKIP() << "compiler has no _Float16";
#endif
}

TEST(Bf16, RoundTripsAndRoundsToNearestEven) {
    for (uint32_t b = 0; b < 0x10000; ++b) {
        const float f = bf16_to_fp32(uint16_t(b));
        if (std::isnan(f)) continue;
        ASSERT_EQ(fp32_to_bf16(f), b);
    }
    EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie -> even
    EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie -> even
    EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3f808001u)), 0x3f81);
    EXPECT_TRUE(std::isnan(bf16_to_fp32(fp32_to_bf16(NAN))));
}

TEST(Quant, RowSizes) {
    EXPECT_EQ(row_size(TensorType::F32, 7), 28u);
    EXPECT_EQ(row_size(TensorType::Q8_0, 64), 68u);
    EXPECT_EQ(row_size(TensorType::Q4_K, 512), 288u);
    EXPECT_EQ(row_size(TensorType::MXFP4, 32), 17u);
    EXPECT_THROW(row_size(TensorType::Q4_0, 48), std::invalid_argument);
    EXPECT_THROW(row_size(static_cast<TensorType>(4), 32), UnsupportedType);
}

TEST(Quant, UnsupportedTypesSayWhich) {
    std::vector<uint8_t> buf(1024);
    std::vector<float> out(256);
    for (TensorType t : {TensorType::Q8_K, TensorType::Q8_1, TensorType::I32}) {
        try {
            dequantize_row(t, buf.data(), out.data(), 256);
            ADD_FAILURE() << "decoded " << name_of(t);
        } catch (const UnsupportedType& e) {
            EXPECT_NE(std::string(e.what()).find(name_of(t)), std::string::npos) << e.what();
        }
        EXPECT_THROW(quantize_row(t, out.data(), buf.data(), 256), UnsupportedType);
        EXPECT_FALSE(can_quantize(t));
    }
    EXPECT_THROW(dequantize_row(static_cast<TensorType>(1000), buf.data(), out.data(), 32), UnsupportedType);
}

TEST(Quant, RoundTripWithinTheFormatsPrecision) {
    for (const QuantCase& c : kCases) {
        SCOPED_TRACE(name_of(c.type));
        ASSERT_TRUE(can_quantize(c.type));
        const uint32_t block = type_traits(c.type)->block_size;
        const size_t row = block == 256 ? 512 : 96;  // several blocks per row
        const size_t n_rows = 5;                      // odd row count, each row on its own
        std::vector<float> x = random_floats(row * n_rows, 11 + uint32_t(c.type));
        const size_t rs = row_size(c.type, row);
        std::vector<uint8_t> q(rs * n_rows);
        for (size_t r = 0; r < n_rows; ++r) quantize_row(c.type, x.data() + r * row, q.data() + r * rs, row);
        std::vector<float> y(x.size());
        for (size_t r = 0; r < n_rows; ++r) dequantize_row(c.type, q.data() + r * rs, y.data() + r * row, row);
        const double e = nmse(y, x);
        EXPECT_LE(e, c.max_nmse);
        // Coarser than expected would show; so would "too good" for a lossy format (a decoder
        // that ignores the data cannot pass the upper bound, an encoder storing floats would
        // fail this lower bound).
        if (c.max_nmse > 0) {
            EXPECT_GT(e, c.max_nmse / 50);
        }
        // The whole-buffer helpers agree with the row functions.
        EXPECT_EQ(quantize(c.type, x.data(), x.size()), q);
        EXPECT_EQ(dequantize(c.type, q.data(), x.size()), y);
    }
}

TEST(Quant, ZerosAndConstantsAreExactWhereRepresentable) {
    for (const QuantCase& c : kCases) {
        SCOPED_TRACE(name_of(c.type));
        const size_t n = type_traits(c.type)->block_size == 256 ? 256 : 64;
        std::vector<float> zeros(n, 0.0f);
        EXPECT_EQ(dequantize(c.type, quantize(c.type, zeros.data(), n).data(), n), zeros);
        std::vector<float> halves(n, -0.5f);  // a power of two: exact in every format
        EXPECT_LT(vkllm::test::max_abs_diff(dequantize(c.type, quantize(c.type, halves.data(), n).data(), n), halves), 1e-3);
    }
}

TEST(Quant, Q8_0ErrorIsBoundedPerBlock) {
    std::vector<float> x = random_floats(32 * 9, 5, -3.0f, 3.0f);
    std::vector<float> y = dequantize(TensorType::Q8_0, quantize(TensorType::Q8_0, x.data(), x.size()).data(), x.size());
    for (size_t b = 0; b < 9; ++b) {
        float amax = 0;
        for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[32 * b + i]));
        for (size_t i = 0; i < 32; ++i) EXPECT_LE(std::fabs(y[32 * b + i] - x[32 * b + i]), 0.57f * amax / 127 + 1e-6f);
    }
}

TEST(Quant, KQuantsHandleLargeDynamicRange) {
    // One large outlier per block: it survives, and it does not blow up the rest of its block.
    std::vector<float> x = random_floats(256 * 3, 9, -0.01f, 0.01f);
    for (size_t b = 0; b < 3; ++b) x[256 * b + 7] = 20.0f;
    for (TensorType t : {TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K, TensorType::Q3_K}) {
        std::vector<float> y = dequantize(t, quantize(t, x.data(), x.size()).data(), x.size());
        EXPECT_NEAR(y[7], 20.0f, 20.0f * 0.07f) << name_of(t);
        // Elements away from the outlier's group stay small.
        for (size_t i = 64; i < 256; ++i) EXPECT_LT(std::fabs(y[i]), 0.05f) << name_of(t) << " at " << i;
    }
}

// ---- against llama.cpp's files ----

TEST(QuantStories, DequantizedTokenEmbeddingsMatchTheF32File) {
    VKLLM_REQUIRE_SHARED(shared);
    const std::string dir = shared + "/models/stories260K/";
    auto f32 = File::open(dir + "stories260K-F32.gguf");
    std::vector<float> ref = dequantize_tensor(*f32->find_tensor("token_embd.weight"));  // [512][64]
    ASSERT_EQ(ref.size(), 512u * 64);
    struct Case {
        const char* file;
        TensorType type;
        double max_nmse;
    };
    for (Case c : {Case{"stories260K-F16.gguf", TensorType::F16, 1e-7}, Case{"stories260K-Q8_0.gguf", TensorType::Q8_0, 1e-4},
                   Case{"stories260K-Q4_0.gguf", TensorType::Q4_0, 1.5e-2}}) {
        SCOPED_TRACE(c.file);
        auto f = File::open(dir + c.file);
        const TensorInfo* t = f->find_tensor("token_embd.weight");
        ASSERT_EQ(t->type, c.type);
        std::vector<float> got = dequantize_tensor(*t);
        EXPECT_LT(nmse(got, ref), c.max_nmse);
        EXPECT_GT(nmse(got, ref), 0.0);
        // Our encoder follows ggml's reference quantizer: re-encoding the F32 weights gives
        // llama-quantize's bytes.
        std::vector<uint8_t> ours = quantize(c.type, ref.data(), ref.size());
        ASSERT_EQ(ours.size(), t->n_bytes);
        EXPECT_EQ(std::memcmp(ours.data(), t->data, ours.size()), 0);
    }
}

// ---- against ggml itself (libggml-base from the llama-oracle, when installed) ----

namespace {

struct Ggml {
    void* lib = nullptr;
    Ggml() {
        std::string home = std::getenv("ORACLE_HOME") ? std::getenv("ORACLE_HOME")
                                                       : std::string(std::getenv("HOME") ? std::getenv("HOME") : "") +
                                                             "/.cache/llama-oracle";
        lib = dlopen((home + "/lib/libggml-base.so").c_str(), RTLD_NOW | RTLD_LOCAL);
    }
    ~Ggml() {
        if (lib) dlclose(lib);
    }
    template <typename F>
    F fn(const std::string& name) const {
        return reinterpret_cast<F>(dlsym(lib, name.c_str()));
    }
};

const char* ggml_suffix(TensorType t) {
    switch (t) {
        case TensorType::Q4_0: return "q4_0";
        case TensorType::Q4_1: return "q4_1";
        case TensorType::Q5_0: return "q5_0";
        case TensorType::Q5_1: return "q5_1";
        case TensorType::Q8_0: return "q8_0";
        case TensorType::Q2_K: return "q2_K";
        case TensorType::Q3_K: return "q3_K";
        case TensorType::Q4_K: return "q4_K";
        case TensorType::Q5_K: return "q5_K";
        case TensorType::Q6_K: return "q6_K";
        case TensorType::MXFP4: return "mxfp4";
        default: return nullptr;
    }
}

}  // namespace

TEST(QuantGgml, DecodersAgreeWithGgmlOnBothEncodersOutput) {
    Ggml ggml;
    if (!ggml.lib) GTEST_SKIP() << "libggml-base from the llama-oracle is not installed";
    using Dequant = void (*)(const void*, float*, int64_t);
    using QuantRef = void (*)(const float*, void*, int64_t);
    for (const QuantCase& c : kCases) {
        const char* sfx = ggml_suffix(c.type);
        if (!sfx) continue;
        SCOPED_TRACE(name_of(c.type));
        auto ggml_dequant = ggml.fn<Dequant>(std::string("dequantize_row_") + sfx);
        auto ggml_quant = ggml.fn<QuantRef>(std::string("quantize_row_") + sfx + "_ref");
        ASSERT_TRUE(ggml_dequant && ggml_quant);
        const size_t n = 256 * 4;
        std::vector<float> x = random_floats(n, 21 + uint32_t(c.type), -2.0f, 2.0f);
        for (size_t i = 0; i < n; i += 97) x[i] *= 8.0f;  // some outliers
        std::vector<uint8_t> theirs(row_size(c.type, n));
        ggml_quant(x.data(), theirs.data(), int64_t(n));
        std::vector<uint8_t> ours = quantize(c.type, x.data(), n);
        for (const auto* bytes : {&theirs, &ours}) {
            std::vector<float> a(n), b(n);
            ggml_dequant(bytes->data(), a.data(), int64_t(n));
            dequantize_row(c.type, bytes->data(), b.data(), n);
            ASSERT_EQ(std::memcmp(a.data(), b.data(), n * sizeof(float)), 0) << (bytes == &ours ? "our" : "ggml's") << " encoding";
        }
        // The 32-element formats use ggml's reference algorithm: identical bytes.
        if (type_traits(c.type)->block_size == 32) {
            EXPECT_EQ(ours, theirs);
        }
        // The K-quant encoders are simpler than ggml's (no scale search) but not much worse.
        std::vector<float> from_theirs = dequantize(c.type, theirs.data(), n);
        std::vector<float> from_ours = dequantize(c.type, ours.data(), n);
        EXPECT_LE(nmse(from_ours, x), 2.5 * nmse(from_theirs, x) + 1e-9);
    }
}

TEST(QuantGgml, HalfConversionsAgreeWithGgml) {
    Ggml ggml;
    if (!ggml.lib) GTEST_SKIP() << "libggml-base from the llama-oracle is not installed";
    using ToHalfRow = void (*)(const float*, uint16_t*, int64_t);
    auto to_f16 = ggml.fn<ToHalfRow>("ggml_fp32_to_fp16_row");
    auto to_bf16 = ggml.fn<ToHalfRow>("ggml_fp32_to_bf16_row_ref");
    ASSERT_TRUE(to_f16 && to_bf16);
    std::mt19937 rng(3);
    std::vector<float> x(1 << 18);
    for (auto& v : x) {
        uint32_t bits = rng();
        std::memcpy(&v, &bits, 4);
        if (std::isnan(v)) v = 0.0f;
    }
    for (size_t i = 0; i < 4096; ++i) x[i] = std::ldexp(float(i), -30);  // subnormal halves
    std::vector<uint16_t> h(x.size()), b(x.size());
    to_f16(x.data(), h.data(), int64_t(x.size()));
    to_bf16(x.data(), b.data(), int64_t(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_EQ(fp32_to_fp16(x[i]), h[i]) << x[i];
        ASSERT_EQ(fp32_to_bf16(x[i]), b[i]) << x[i];
    }
}

// ---- IQ4_NL and IQ4_XS against gguf-py's reference dequantizers ----

namespace {

std::vector<uint8_t> from_hex(const std::string& hex) {
    std::vector<uint8_t> out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(uint8_t(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return out;
}

}  // namespace

// tests/gguf/golden/iq4_dequant.txt: random blocks and gguf-py's values for them
// (scripts/make_golden_iq4.py), compared bit for bit.
TEST(Iq4, DequantizationMatchesGgufPyBitForBit) {
    std::ifstream in(vkllm::test::source_dir() + "/tests/gguf/golden/iq4_dequant.txt");
    ASSERT_TRUE(in) << "tests/gguf/golden/iq4_dequant.txt is missing";
    std::map<std::string, std::vector<uint8_t>> bytes, values;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream words(line);
        std::string type, what, hex;
        words >> type >> what >> hex;
        (what == "bytes" ? bytes : values)[type] = from_hex(hex);
    }
    const std::pair<const char*, TensorType> types[] = {{"IQ4_NL", TensorType(20)}, {"IQ4_XS", TensorType(23)}};
    for (const auto& [name, type] : types) {
        SCOPED_TRACE(name);
        ASSERT_TRUE(bytes.count(name) && values.count(name));
        const auto traits = type_traits(type);
        ASSERT_TRUE(traits && traits->dequantizable);
        const size_t n = values[name].size() / 4;
        ASSERT_EQ(bytes[name].size(), n / traits->block_size * traits->type_size);
        ASSERT_EQ(row_size(type, n), bytes[name].size());
        const std::vector<float> got = dequantize(type, bytes[name].data(), n);
        size_t differ = 0;
        for (size_t i = 0; i < n; ++i) {
            uint32_t want;
            std::memcpy(&want, values[name].data() + 4 * i, 4);
            if (std::bit_cast<uint32_t>(got[i]) != want && ++differ <= 5)
                ADD_FAILURE() << "element " << i << ": got " << got[i] << ", gguf-py " << std::bit_cast<float>(want);
        }
        EXPECT_EQ(differ, 0u);
    }
}

// quantize() encodes large buffers on several threads: the bytes equal one quantize_row call.
TEST(Quantize, LargeBuffersEncodeTheSameOnAnyNumberOfThreads) {
    const size_t n = 256 * 4096 * 3 + 256 * 7;  // several parts, the last one shorter
    const std::vector<float> x = random_floats(n, 11);
    for (TensorType t : {TensorType::Q4_K, TensorType::Q8_0, TensorType::F16}) {
        SCOPED_TRACE(type_traits(t)->name);
        std::vector<uint8_t> one(row_size(t, n));
        quantize_row(t, x.data(), one.data(), n);
        EXPECT_EQ(quantize(t, x.data(), n), one);
    }
    EXPECT_THROW(quantize(TensorType::Q8_K, x.data(), n), UnsupportedType);  // Q8_K: no encoder
}
