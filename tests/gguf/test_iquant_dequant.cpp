// The i-quant grid types (IQ2_XXS/XS/S, IQ3_XXS/S, IQ1_S/M) and the ternary types (TQ1_0,
// TQ2_0) on the CPU: decoding bit for bit as gguf-py's reference dequantizers and (when the
// llama-oracle is installed) as ggml's own, the grids against their GLSL copy, and hand-built
// blocks whose values follow from the format alone.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "gguf/gguf.h"
#include "gguf/iq_grids.h"
#include "gguf/quant.h"
#include "test_support.h"

using namespace vkllm::gguf;

namespace {

struct IqType {
    const char* name;
    TensorType type;
    const char* ggml_suffix;  // ggml's dequantize_row_<suffix>
};

const IqType kTypes[] = {
    {"IQ2_XXS", TensorType::IQ2_XXS, "iq2_xxs"}, {"IQ2_XS", TensorType::IQ2_XS, "iq2_xs"}, {"IQ2_S", TensorType::IQ2_S, "iq2_s"},
    {"IQ3_XXS", TensorType::IQ3_XXS, "iq3_xxs"}, {"IQ3_S", TensorType::IQ3_S, "iq3_s"},   {"IQ1_S", TensorType::IQ1_S, "iq1_s"},
    {"IQ1_M", TensorType::IQ1_M, "iq1_m"},       {"TQ1_0", TensorType::TQ1_0, "tq1_0"},   {"TQ2_0", TensorType::TQ2_0, "tq2_0"},
};

std::vector<uint8_t> from_hex(const std::string& hex) {
    std::vector<uint8_t> out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(uint8_t(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return out;
}

// Elements whose float32 bit patterns differ (reported, at most five).
size_t count_differences(const std::vector<float>& got, const float* want, size_t n, const char* who) {
    size_t differ = 0;
    for (size_t i = 0; i < n; ++i)
        if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(want[i]) && ++differ <= 5)
            ADD_FAILURE() << "element " << i << ": got " << got[i] << ", " << who << " " << want[i];
    return differ;
}

}  // namespace

TEST(IquantTypes, SizesAreGgmls) {
    const std::map<std::string, uint32_t> bytes = {{"IQ2_XXS", 66}, {"IQ2_XS", 74}, {"IQ2_S", 82},
                                                   {"IQ3_XXS", 98}, {"IQ3_S", 110}, {"IQ1_S", 50},
                                                   {"IQ1_M", 56},   {"TQ1_0", 54},  {"TQ2_0", 66}};
    for (const IqType& t : kTypes) {
        SCOPED_TRACE(t.name);
        const auto traits = type_traits(t.type);
        ASSERT_TRUE(traits);
        EXPECT_STREQ(traits->name, t.name);
        EXPECT_TRUE(traits->dequantizable);
        EXPECT_EQ(row_size(t.type, 512), 2 * bytes.at(t.name));
        EXPECT_THROW(row_size(t.type, 32), std::invalid_argument);  // a 256-block type
        std::vector<uint8_t> block(bytes.at(t.name));
        std::vector<float> out(256);
        EXPECT_THROW(dequantize_row(t.type, block.data(), out.data(), 128), std::invalid_argument);
        EXPECT_TRUE(can_quantize(t.type));  // encoders: tests/gguf/test_iquant_encode.cpp
    }
}

// tests/gguf/golden/iquant_dequant.txt: random blocks with normal, negative, subnormal and zero
// scales, and gguf-py's values for them (scripts/make_golden_iquant.py), compared bit for bit.
TEST(IquantDequant, MatchesGgufPyBitForBit) {
    std::ifstream in(vkllm::test::source_dir() + "/tests/gguf/golden/iquant_dequant.txt");
    ASSERT_TRUE(in) << "tests/gguf/golden/iquant_dequant.txt is missing";
    std::map<std::string, std::vector<uint8_t>> bytes, values;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream words(line);
        std::string type, what, hex;
        words >> type >> what >> hex;
        (what == "bytes" ? bytes : values)[type] = from_hex(hex);
    }
    for (const IqType& t : kTypes) {
        SCOPED_TRACE(t.name);
        ASSERT_TRUE(bytes.count(t.name) && values.count(t.name));
        const size_t n = values[t.name].size() / 4;
        ASSERT_EQ(row_size(t.type, n), bytes[t.name].size());
        const std::vector<float> got = dequantize(t.type, bytes[t.name].data(), n);
        std::vector<float> want(n);
        std::memcpy(want.data(), values[t.name].data(), 4 * n);
        EXPECT_EQ(count_differences(got, want.data(), n, "gguf-py"), 0u);
    }
}

// ---- against ggml itself (libggml-base from the llama-oracle, when installed) ----

TEST(IquantDequant, MatchesGgmlBitForBit) {
    const char* home_env = std::getenv("ORACLE_HOME");
    const std::string home = home_env ? home_env : std::string(std::getenv("HOME") ? std::getenv("HOME") : "") + "/.cache/llama-oracle";
    void* lib = dlopen((home + "/lib/libggml-base.so").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) GTEST_SKIP() << "libggml-base from the llama-oracle is not installed";
    using Dequant = void (*)(const void*, float*, int64_t);
    std::mt19937 rng(20261128);
    const float scales[] = {0.0123f, -0.75f, 3.0e-6f, 0.0f, 2.5f, -1.0e-3f, 0.031f, 7.0f};
    for (const IqType& t : kTypes) {
        SCOPED_TRACE(t.name);
        auto ggml_dequant = reinterpret_cast<Dequant>(dlsym(lib, (std::string("dequantize_row_") + t.ggml_suffix).c_str()));
        ASSERT_TRUE(ggml_dequant);
        const size_t n_blocks = 64, n = 256 * n_blocks, type_size = type_traits(t.type)->type_size;
        std::vector<uint8_t> raw(n_blocks * type_size);
        for (auto& b : raw) b = uint8_t(rng());
        for (size_t i = 0; i < n_blocks; ++i) {  // a finite block scale where the type keeps it
            uint8_t* block = raw.data() + i * type_size;
            const uint16_t d = fp32_to_fp16(scales[i % std::size(scales)]);
            if (t.type == TensorType::IQ1_M) {  // spread over the top nibbles of the last four u16
                for (int k = 0; k < 4; ++k) block[48 + 2 * k + 1] = uint8_t((block[48 + 2 * k + 1] & 0x0F) | ((d >> (4 * k)) & 0xF) << 4);
            } else {
                const size_t at = t.type == TensorType::TQ1_0 ? 52 : t.type == TensorType::TQ2_0 ? 64 : 0;
                std::memcpy(block + at, &d, 2);
            }
        }
        std::vector<float> want(n);
        ggml_dequant(raw.data(), want.data(), int64_t(n));
        EXPECT_EQ(count_differences(dequantize(t.type, raw.data(), n), want.data(), n, "ggml"), 0u);
    }
    dlclose(lib);
}

// ---- blocks built by hand ----

// TQ2_0: code l of byte 32h + m is weight 128h + 32l + m, value (code - 1) * d.
TEST(IquantDequant, Tq2BlockFromItsLayout) {
    std::vector<uint8_t> block(66);
    std::vector<int> want(256);
    std::mt19937 rng(5);
    for (int i = 0; i < 256; ++i) {
        const int code = int(rng() % 3), h = i / 128, l = (i % 128) / 32, m = i % 32;
        block[32 * h + m] |= uint8_t(code << (2 * l));
        want[i] = code - 1;
    }
    const uint16_t d = fp32_to_fp16(0.5f);
    std::memcpy(block.data() + 64, &d, 2);
    const std::vector<float> got = dequantize(TensorType::TQ2_0, block.data(), 256);
    for (int i = 0; i < 256; ++i) ASSERT_EQ(got[i], 0.5f * float(want[i])) << i;
}

// TQ1_0: a byte holds five trits t1..t5 as ceil(256 * (t1 t2 t3 t4 t5)_3 / 243); every one of
// the 243 five-trit values must come back, in each of the three places a byte can sit.
TEST(IquantDequant, Tq1EveryTritPatternDecodes) {
    auto trits_of = [](int v, int count) {  // most significant first
        std::vector<int> t(count);
        for (int k = count - 1; k >= 0; --k, v /= 3) t[k] = v % 3;
        return t;
    };
    for (int base = 0; base < 243; base += 4) {
        std::vector<uint8_t> block(54);
        std::vector<int> want(256);
        auto put = [&](uint8_t* byte, int v, int count, auto weight_of) {
            *byte = uint8_t((v * 256 + (count == 5 ? 242 : 80)) / (count == 5 ? 243 : 81));
            const std::vector<int> t = trits_of(v, count);
            for (int n = 0; n < count; ++n) want[weight_of(n)] = t[n] - 1;
        };
        for (int m = 0; m < 32; ++m) put(&block[m], (base + m) % 243, 5, [&](int n) { return 32 * n + m; });
        for (int m = 0; m < 16; ++m) put(&block[32 + m], (base + 7 * m) % 243, 5, [&](int n) { return 160 + 16 * n + m; });
        for (int m = 0; m < 4; ++m) put(&block[48 + m], (base + 13 * m) % 81, 4, [&](int n) { return 240 + 4 * n + m; });
        const uint16_t d = fp32_to_fp16(-2.0f);
        std::memcpy(block.data() + 52, &d, 2);
        const std::vector<float> got = dequantize(TensorType::TQ1_0, block.data(), 256);
        for (int i = 0; i < 256; ++i) ASSERT_EQ(got[i], -2.0f * float(want[i])) << "base " << base << " weight " << i;
    }
}

// IQ2_XXS: grid point, scale and signs of the first 8 weights from one hand-written group.
TEST(IquantDequant, Iq2xxsGroupFromItsLayout) {
    std::vector<uint8_t> block(66);
    const uint16_t d = fp32_to_fp16(1.0f);
    std::memcpy(block.data(), &d, 2);
    block[2] = 7;                                    // group 0: grid point 7
    const uint32_t aux = (5u << 28) | 0x3u;          // scale 5; sign bits 0 and 1 (even count: bit 7 clear)
    std::memcpy(block.data() + 6, &aux, 4);
    const std::vector<float> got = dequantize(TensorType::IQ2_XXS, block.data(), 256);
    const int8_t* p = iq_grid(IqGridId::IQ2_XXS).point(7);
    const float db = (0.5f + 5.0f) * 0.25f;
    for (int j = 0; j < 8; ++j) EXPECT_EQ(got[j], (j < 2 ? -1.0f : 1.0f) * db * float(p[j])) << j;
}

// ---- the grids ----

TEST(IqGrids, ShapesValuesAndSigns) {
    const std::map<IqGridId, std::pair<uint32_t, uint32_t>> shapes = {
        {IqGridId::IQ2_XXS, {256, 8}}, {IqGridId::IQ2_XS, {512, 8}}, {IqGridId::IQ2_S, {1024, 8}},
        {IqGridId::IQ3_XXS, {256, 4}}, {IqGridId::IQ3_S, {512, 4}},  {IqGridId::IQ1_S, {2048, 8}}};
    for (IqGridId id : kIqGridIds) {
        const IqGrid& g = iq_grid(id);
        SCOPED_TRACE(g.name);
        EXPECT_EQ(g.points, shapes.at(id).first);
        EXPECT_EQ(g.dim, shapes.at(id).second);
        std::set<std::vector<int8_t>> distinct;
        for (uint32_t i = 0; i < g.points; ++i) distinct.insert(std::vector<int8_t>(g.point(i), g.point(i) + g.dim));
        EXPECT_EQ(distinct.size(), g.points) << "points repeat";
    }
    // First and last points, as in llama.cpp's tables.
    EXPECT_EQ(iq_grid(IqGridId::IQ2_XXS).point(1)[0], 43);  // 0x080808080808082b
    EXPECT_EQ(iq_grid(IqGridId::IQ3_XXS).point(5)[0], 62);  // 0x04040c3e
    EXPECT_EQ(iq_grid(IqGridId::IQ1_S).point(0)[0], -1);
    EXPECT_EQ(iq_grid(IqGridId::IQ1_S).point(2047)[7], 1);
    // llama.cpp's ksigns_iq2xs: 0, 129, 130, 3, ..., 255.
    EXPECT_EQ(iq_signs_from_7_bits(0), 0);
    EXPECT_EQ(iq_signs_from_7_bits(1), 129);
    EXPECT_EQ(iq_signs_from_7_bits(3), 3);
    EXPECT_EQ(iq_signs_from_7_bits(126), 126);
    EXPECT_EQ(iq_signs_from_7_bits(127), 255);
    for (uint32_t s = 0; s < 128; ++s) EXPECT_EQ(std::popcount(uint32_t(iq_signs_from_7_bits(s))) % 2, 0) << s;
}
