// Importance matrices: llama.cpp's GGUF imatrix format written and read back, its legacy .dat
// format read, the importance a quantizer takes from them, and requantize using it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "gguf/requantize.h"
#include "test_support.h"
#include "vkllm/imatrix.h"

using vkllm::Imatrix;
using vkllm::ImatrixEntry;
namespace gguf = vkllm::gguf;

namespace {

// Two plain matrices and a stack of three experts, one of which no token reached.
Imatrix sample() {
    Imatrix m;
    const float a[2 * 3] = {1, 2, 3, -1, 0.5f, 0};
    m.accumulate("blk.0.attn_q.weight", a, 2, 3);
    const float b[4] = {2, -2, 1, 1};
    m.accumulate("blk.0.ffn_down.weight", b, 2, 2);
    const float e[3 * 2] = {1, 1, 3, 0, 0, 4};
    m.accumulate("blk.0.ffn_up_exps.weight", e, 1, 2, /*mat=*/0, /*n_mat=*/3);
    m.accumulate("blk.0.ffn_up_exps.weight", e + 2, 2, 2, /*mat=*/2, /*n_mat=*/3);
    m.datasets = {"train.txt"};
    m.chunk_count = 4;
    m.chunk_size = 512;
    return m;
}

void put_i32(std::string& s, int32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }
void put_f32s(std::string& s, std::initializer_list<float> v) {
    for (float f : v) s.append(reinterpret_cast<const char*>(&f), 4);
}

}  // namespace

TEST(Imatrix, AccumulatesSquaresPerColumnAndMatrix) {
    const Imatrix m = sample();
    ASSERT_EQ(m.entries.size(), 3u);
    EXPECT_EQ(m.entries[0].name, "blk.0.attn_q.weight");  // kept in name order
    const ImatrixEntry* q = m.find("blk.0.attn_q.weight");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->sums, (std::vector<float>{2, 4.25f, 9}));
    EXPECT_EQ(q->counts, (std::vector<int64_t>{2}));
    const ImatrixEntry* e = m.find("blk.0.ffn_up_exps.weight");
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->sums, (std::vector<float>{1, 1, 0, 0, 9, 16}));
    EXPECT_EQ(e->counts, (std::vector<int64_t>{1, 0, 2}));
    // Means, and ones for the expert no token reached (llama-quantize's rule).
    EXPECT_EQ(e->importance(), (std::vector<float>{1, 1, 1, 1, 4.5f, 8}));
    EXPECT_EQ(m.find("blk.1.attn_q.weight"), nullptr);
    Imatrix bad = sample();
    const float x[4] = {};
    EXPECT_THROW(bad.accumulate("blk.0.attn_q.weight", x, 1, 4), std::invalid_argument);  // another width
    EXPECT_THROW(bad.accumulate("blk.0.ffn_up_exps.weight", x, 1, 2, 3, 3), std::invalid_argument);
}

TEST(Imatrix, GgufRoundTripInLlamaCppsLayout) {
    const Imatrix m = sample();
    const std::string path = vkllm::test::temp_path("imatrix_roundtrip.gguf");
    vkllm::write_imatrix(m, path);
    // The layout llama-quantize reads: general.type, the three imatrix.* keys and per weight
    // <name>.in_sum2 [n_cols, n_mat] and <name>.counts [1, n_mat], F32.
    auto f = gguf::File::open(path);
    EXPECT_EQ(f->get_string("general.type").value_or(""), "imatrix");
    EXPECT_EQ(f->get_strings("imatrix.datasets").value_or(std::vector<std::string>{}),
              (std::vector<std::string>{"train.txt"}));
    EXPECT_EQ(f->get_int("imatrix.chunk_count").value_or(0), 4);
    EXPECT_EQ(f->get_int("imatrix.chunk_size").value_or(0), 512);
    const gguf::TensorInfo* sums = f->find_tensor("blk.0.ffn_up_exps.weight.in_sum2");
    const gguf::TensorInfo* counts = f->find_tensor("blk.0.ffn_up_exps.weight.counts");
    ASSERT_TRUE(sums && counts);
    EXPECT_EQ(sums->type, gguf::TensorType::F32);
    EXPECT_EQ(sums->dims, (std::vector<uint64_t>{2, 3}));
    EXPECT_EQ(counts->dims, (std::vector<uint64_t>{1, 3}));

    const Imatrix r = vkllm::read_imatrix(path);
    EXPECT_FALSE(r.legacy);
    EXPECT_EQ(r.datasets, m.datasets);
    EXPECT_EQ(r.chunk_count, 4);
    EXPECT_EQ(r.chunk_size, 512);
    ASSERT_EQ(r.entries.size(), m.entries.size());
    for (size_t i = 0; i < m.entries.size(); ++i) {
        EXPECT_EQ(r.entries[i].name, m.entries[i].name);
        EXPECT_EQ(r.entries[i].n_cols, m.entries[i].n_cols);
        EXPECT_EQ(r.entries[i].sums, m.entries[i].sums);
        EXPECT_EQ(r.entries[i].counts, m.entries[i].counts);
    }
}

// llama-imatrix's legacy binary format: per entry the mean times the number of chunks.
TEST(Imatrix, ReadsTheLegacyDatFormat) {
    std::string s;
    put_i32(s, 2);
    for (const char* name : {"blk.1.attn_k.weight", "blk.0.attn_k.weight"}) {
        put_i32(s, int32_t(std::strlen(name)));
        s += name;
        put_i32(s, 4);  // chunks
        put_i32(s, 2);
        put_f32s(s, {8, 2});
    }
    put_i32(s, 4);
    put_i32(s, 9);
    s += "train.txt";
    const Imatrix m = vkllm::read_imatrix(vkllm::test::write_temp_file("imatrix_legacy.dat", s));
    EXPECT_TRUE(m.legacy);
    ASSERT_EQ(m.entries.size(), 2u);
    EXPECT_EQ(m.entries[0].name, "blk.0.attn_k.weight");
    EXPECT_EQ(m.entries[0].importance(), (std::vector<float>{2, 0.5f}));  // divided by the chunks, as llama-quantize does
    EXPECT_EQ(m.chunk_count, 4);
    EXPECT_EQ(m.datasets, (std::vector<std::string>{"train.txt"}));
    // Truncated: the error names the file.
    try {
        vkllm::read_imatrix(vkllm::test::write_temp_file("imatrix_short.dat", s.substr(0, 30)));
        FAIL() << "a truncated file was read";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("imatrix_short.dat"), std::string::npos) << e.what();
    }
}

TEST(Imatrix, RefusesFilesThatAreNotOne) {
    // A model file (general.type "model") and a GGUF whose sums have no counts.
    gguf::Writer model;
    model.set("general.type", gguf::Value::from_string("model"));
    model.add_tensor_f32("blk.0.attn_q.weight", {2, 2}, {1, 2, 3, 4});
    const std::string model_path = vkllm::test::temp_path("not_imatrix.gguf");
    model.write(model_path);
    EXPECT_THROW(vkllm::read_imatrix(model_path), std::runtime_error);
    gguf::Writer half;
    half.add_tensor_f32("blk.0.attn_q.weight.in_sum2", {2, 1}, {1, 2});
    const std::string half_path = vkllm::test::temp_path("imatrix_half.gguf");
    half.write(half_path);
    try {
        vkllm::read_imatrix(half_path);
        FAIL() << "sums without counts were read";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("without counts"), std::string::npos) << e.what();
    }
    EXPECT_THROW(vkllm::read_imatrix(vkllm::test::temp_path("no_such_imatrix.gguf")), std::runtime_error);
}

// requantize_planned encodes each weight with its entry's importance (per expert for stacks)
// and refuses the types llama.cpp will not write without an importance matrix.
TEST(Imatrix, RequantizeUsesTheImportance) {
    const size_t cols = 64, rows = 16, experts = 2;
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> w(cols * rows * experts);
    for (float& v : w) v = normal(rng);
    gguf::Writer in;
    in.add_tensor_f32("blk.0.ffn_up_exps.weight", {cols, rows, experts}, w);
    const std::vector<uint8_t> bytes = in.to_bytes();
    auto file = gguf::File::from_memory(bytes.data(), bytes.size(), "in.gguf");
    // Expert 0 cares for the first columns, expert 1 for the last ones.
    Imatrix m;
    std::vector<float> x(cols, 0.05f);
    for (size_t j = 0; j < 8; ++j) x[j] = 10.0f;
    m.accumulate("blk.0.ffn_up_exps.weight", x.data(), 1, int64_t(cols), 0, int64_t(experts));
    std::reverse(x.begin(), x.end());
    m.accumulate("blk.0.ffn_up_exps.weight", x.data(), 1, int64_t(cols), 1, int64_t(experts));
    const std::vector<float> imp = m.entries[0].importance();

    const std::vector<gguf::TensorConversion> plan = {
        {"blk.0.ffn_up_exps.weight", gguf::TensorType::F32, gguf::TensorType::IQ4_NL, ""}};
    auto weighted_error = [&](const gguf::Requantized& r) {
        const std::vector<uint8_t> out = r.writer.to_bytes();
        auto f = gguf::File::from_memory(out.data(), out.size(), "out.gguf");
        const std::vector<float> back = gguf::dequantize_tensor(f->tensors()[0]);
        double e = 0;
        for (size_t i = 0; i < w.size(); ++i) {
            const size_t expert = i / (cols * rows), col = i % cols;
            e += double(imp[expert * cols + col]) * double(back[i] - w[i]) * double(back[i] - w[i]);
        }
        return e;
    };
    const double plain = weighted_error(gguf::requantize_planned(*file, plan, 25));
    const double weighted = weighted_error(gguf::requantize_planned(*file, plan, 25, {}, &m));
    EXPECT_LT(weighted, 0.9 * plain) << "plain " << plain << ", with the importance " << weighted;

    // A wrong-sized entry is an error naming the tensor.
    Imatrix wrong;
    wrong.accumulate("blk.0.ffn_up_exps.weight", x.data(), 1, int64_t(cols));  // one matrix, not two
    try {
        gguf::requantize_planned(*file, plan, 25, {}, &wrong);
        FAIL() << "a one-matrix entry was used for two experts";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("blk.0.ffn_up_exps.weight"), std::string::npos) << e.what();
    }

    // llama.cpp's types that need one: refused without, token embedding and output excepted.
    EXPECT_TRUE(gguf::requires_imatrix("blk.0.attn_q.weight", gguf::TensorType::IQ2_XXS, 19));
    EXPECT_TRUE(gguf::requires_imatrix("blk.0.attn_q.weight", gguf::TensorType::IQ3_XXS, 23));
    EXPECT_FALSE(gguf::requires_imatrix("output.weight", gguf::TensorType::IQ2_XXS, 19));
    EXPECT_FALSE(gguf::requires_imatrix("token_embd.weight", gguf::TensorType::IQ1_S, 24));
    EXPECT_TRUE(gguf::requires_imatrix("blk.0.ffn_down.weight", gguf::TensorType::Q2_K, 21));  // Q2_K_S
    EXPECT_FALSE(gguf::requires_imatrix("blk.0.ffn_down.weight", gguf::TensorType::Q2_K, 10));  // Q2_K
    EXPECT_FALSE(gguf::requires_imatrix("blk.0.ffn_down.weight", gguf::TensorType::IQ4_XS, 30));
    const std::vector<gguf::TensorConversion> iq2 = {
        {"blk.0.ffn_up_exps.weight", gguf::TensorType::F32, gguf::TensorType::IQ2_XXS, ""}};
    try {
        gguf::requantize_planned(*file, iq2, 19);
        FAIL() << "IQ2_XXS was written without an importance matrix";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("importance matrix"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("blk.0.ffn_up_exps.weight (IQ2_XXS)"), std::string::npos) << e.what();
    }
}
