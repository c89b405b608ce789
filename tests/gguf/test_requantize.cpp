// Requantization policy and output, checked against llama-quantize's stories260K files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "gguf/requantize.h"
#include "test_support.h"

using namespace vkllm::gguf;

namespace {

std::unique_ptr<File> reparse(const Requantized& r) {
    std::vector<uint8_t> bytes = r.writer.to_bytes();
    return File::from_memory(bytes.data(), bytes.size(), "requantized.gguf");
}

TensorInfo info(const std::string& name, TensorType type, std::vector<uint64_t> dims) {
    TensorInfo t;
    t.name = name;
    t.type = type;
    t.dims = std::move(dims);
    return t;
}

}  // namespace

TEST(Requantize, PolicyKeepsWhatLlamaQuantizeKeeps) {
    auto plan = [](const std::string& name, TensorType from, std::vector<uint64_t> dims, TensorType target) {
        return plan_conversion(info(name, from, std::move(dims)), target);
    };
    EXPECT_EQ(plan("blk.0.attn_q.weight", TensorType::F32, {256, 256}, TensorType::Q4_K).to, TensorType::Q4_K);
    EXPECT_EQ(plan("blk.0.attn_norm.weight", TensorType::F32, {256}, TensorType::Q4_K).to, TensorType::F32);
    EXPECT_EQ(plan("blk.0.ffn_gate_inp.weight", TensorType::F32, {256, 8}, TensorType::Q4_K).to, TensorType::F32);
    EXPECT_EQ(plan("blk.0.attn_q.bias", TensorType::F32, {256, 2}, TensorType::Q4_K).to, TensorType::F32);
    EXPECT_EQ(plan("position_embd.weight", TensorType::F32, {256, 64}, TensorType::Q8_0).to, TensorType::F32);
    EXPECT_EQ(plan("blk.0.attn_q.weight", TensorType::Q8_K, {256, 1}, TensorType::Q8_0).to,
              TensorType::Q8_K);  // cannot be decoded: copied as is
    // Row-length fallbacks, as llama.cpp's tensor_type_fallback.
    auto fb = plan("blk.0.attn_q.weight", TensorType::F32, {64, 64}, TensorType::Q4_K);
    EXPECT_EQ(fb.to, TensorType::Q5_0);
    EXPECT_NE(fb.note.find("row length 64"), std::string::npos) << fb.note;
    EXPECT_EQ(plan("w.weight", TensorType::F32, {96, 2}, TensorType::Q6_K).to, TensorType::Q8_0);
    EXPECT_EQ(plan("w.weight", TensorType::F32, {96, 2}, TensorType::Q3_K).to, TensorType::Q4_0);
    EXPECT_EQ(plan("w.weight", TensorType::F32, {172, 2}, TensorType::Q5_K).to, TensorType::F16);
    EXPECT_EQ(plan("w.weight", TensorType::F32, {172, 2}, TensorType::Q8_0).to, TensorType::F16);
    EXPECT_EQ(plan("w.weight", TensorType::Q8_0, {64, 4, 8}, TensorType::F32).to, TensorType::F32);  // experts: 3-D
}

TEST(Requantize, RejectsTargetsItCannotEncode) {
    Writer w;
    w.add_tensor_f32("a.weight", {32, 2}, std::vector<float>(64, 1.0f));
    std::vector<uint8_t> bytes = w.to_bytes();
    auto f = File::from_memory(bytes.data(), bytes.size(), "x.gguf");
    EXPECT_THROW(requantize(*f, TensorType::Q8_K), UnsupportedType);
    EXPECT_THROW(requantize(*f, TensorType::I32), UnsupportedType);
}

TEST(Requantize, StoriesF32ToQ8_0IsByteIdenticalToLlamaQuantize) {
    VKLLM_REQUIRE_SHARED(shared);
    const std::string dir = shared + "/models/stories260K/";
    auto f32 = File::open(dir + "stories260K-F32.gguf");
    for (TensorType target : {TensorType::Q8_0, TensorType::Q4_0}) {
        const std::string name = type_traits(target)->name;
        SCOPED_TRACE(name);
        auto ref = File::open(dir + "stories260K-" + name + ".gguf");
        Requantized r = requantize(*f32, target);
        auto out = reparse(r);
        EXPECT_EQ(out->get_int("general.file_type"), ref->get_int("general.file_type"));
        EXPECT_EQ(out->get_int("general.quantization_version"), 2);
        EXPECT_EQ(out->get_string("general.architecture"), "llama");
        EXPECT_EQ(out->get_strings("tokenizer.ggml.tokens"), f32->get_strings("tokenizer.ggml.tokens"));
        ASSERT_EQ(out->tensors().size(), ref->tensors().size());
        EXPECT_LT(r.bytes_out, r.bytes_in);
        for (const TensorInfo& t : ref->tensors()) {
            // llama-quantize keeps output.weight at higher precision (its per-model mix); we do not.
            if (target == TensorType::Q4_0 && t.name == "output.weight") continue;
            const TensorInfo* ours = out->find_tensor(t.name);
            ASSERT_NE(ours, nullptr) << t.name;
            EXPECT_EQ(ours->type, t.type) << t.name;
            ASSERT_EQ(ours->n_bytes, t.n_bytes) << t.name;
            EXPECT_EQ(std::memcmp(ours->data, t.data, t.n_bytes), 0) << t.name;
        }
    }
}

TEST(Requantize, StoriesToKQuantsStaysClose) {
    VKLLM_REQUIRE_SHARED(shared);
    auto f32 = File::open(shared + "/models/stories260K/stories260K-F32.gguf");
    struct Case {
        TensorType target;
        double max_nmse;
    };
    for (Case c : {Case{TensorType::Q6_K, 1e-3}, Case{TensorType::Q4_K, 2e-2}, Case{TensorType::F16, 1e-6}}) {
        SCOPED_TRACE(type_traits(c.target)->name);
        auto out = reparse(requantize(*f32, c.target));
        for (const TensorInfo& t : out->tensors()) {
            const TensorInfo* src = f32->find_tensor(t.name);
            ASSERT_NE(src, nullptr);
            if (t.dims.size() == 1) {
                EXPECT_EQ(t.type, TensorType::F32) << t.name;
            }
            if (t.name.find("ffn_down") != std::string::npos) {
                EXPECT_EQ(t.type, TensorType::F16) << t.name;  // 172 columns fit no block
            }
            EXPECT_LT(vkllm::test::nmse(dequantize_tensor(t), dequantize_tensor(*src)), c.max_nmse) << t.name;
        }
    }
}

// KeepSuperWeights on a small ffn_down: the super weight leaves its block's scale (stored as the
// block-mates' largest |w|, same sign), the correction is exact minus stored, the other
// weights are clipped at k x RMS, other tensors are untouched, and the corrections read back.
TEST(Requantize, KeepSuperWeightsMovesTheWeightOutOfItsBlockAndRecordsTheCorrection) {
    const uint64_t n_ff = 64, n_embd = 4;
    std::vector<float> down(n_ff * n_embd);
    for (size_t i = 0; i < down.size(); ++i) down[i] = 0.01f * float(int(i % 17) - 8);  // |w| <= 0.08
    down[2 * n_ff + 5] = 0.5f;    // an ordinary outlier in row 2 (clipped at 3 x RMS)
    down[1 * n_ff + 40] = -6.0f;  // the super weight: row 1, col 40
    Writer w;
    w.set("general.architecture", Value::from_string("llama"));
    w.add_tensor_f32("blk.0.ffn_down.weight", {n_ff, n_embd}, down);
    w.add_tensor_f32("blk.0.ffn_up.weight", {n_embd * 16, 4}, std::vector<float>(256, 0.25f));
    std::vector<uint8_t> bytes = w.to_bytes();
    auto f = File::from_memory(bytes.data(), bytes.size(), "x.gguf");

    KeepSuperWeights keep;
    keep.weights = {{0, 1, 40}};
    keep.clip_sigmas = 3;
    const Requantized r = requantize(*f, TensorType::Q4_0, &keep);
    ASSERT_EQ(r.kept.size(), 1u);
    EXPECT_EQ(r.kept[0].layer, 0);
    EXPECT_EQ(r.kept[0].row, 1);
    EXPECT_EQ(r.kept[0].col, 40);
    EXPECT_FLOAT_EQ(r.kept[0].value, -6.0f);
    EXPECT_EQ(r.clipped, 1u);  // only the 0.5
    auto out = reparse(r);
    const std::vector<float> stored = dequantize_tensor(*out->find_tensor("blk.0.ffn_down.weight"));
    const float s = stored[1 * n_ff + 40];
    EXPECT_LT(s, 0.0f);  // the sign kept
    EXPECT_LE(std::fabs(s), 0.081f);  // at most the block-mates' largest |w|
    EXPECT_FLOAT_EQ(r.kept[0].delta, -6.0f - s);
    // The block-mates were quantised at their own scale (one Q4_0 step: 0.08 / 8), not at the super
    // weight's (6 / 8, which rounds every one of them to 0, as plain Q4_0 does).
    auto plain = reparse(requantize(*f, TensorType::Q4_0));
    const std::vector<float> plain_stored = dequantize_tensor(*plain->find_tensor("blk.0.ffn_down.weight"));
    float kept_err = 0, plain_err = 0;
    for (uint64_t c = 32; c < 64; ++c)
        if (c != 40) {
            kept_err = std::max(kept_err, std::fabs(stored[1 * n_ff + c] - down[1 * n_ff + c]));
            plain_err = std::max(plain_err, std::fabs(plain_stored[1 * n_ff + c] - down[1 * n_ff + c]));
        }
    EXPECT_LE(kept_err, 0.0101f);
    EXPECT_GE(plain_err, 0.07f);
    EXPECT_FLOAT_EQ(plain_stored[1 * n_ff + 40], -6.0f);  // plain Q4_0 keeps the super weight itself
    // The clipped outlier: 3 x the RMS of the others.
    EXPECT_LT(stored[2 * n_ff + 5], 0.3f);
    // Another tensor is quantised as usual.
    EXPECT_EQ(out->find_tensor("blk.0.ffn_up.weight")->type, TensorType::Q4_0);

    const std::vector<SuperWeightCorrection> back = read_super_weight_corrections(*out);
    ASSERT_EQ(back.size(), 1u);
    EXPECT_EQ(back[0].row, 1);
    EXPECT_EQ(back[0].col, 40);
    EXPECT_FLOAT_EQ(back[0].delta, r.kept[0].delta);
    // Requantizing a kept file starts from the exact values: plainly (the super weight back in
    // the weights, no corrections) or keeping them again.
    auto q8 = reparse(requantize(*out, TensorType::Q8_0));
    EXPECT_TRUE(read_super_weight_corrections(*q8).empty());
    EXPECT_NEAR(dequantize_tensor(*q8->find_tensor("blk.0.ffn_down.weight"))[1 * n_ff + 40], -6.0f, 0.03f);
    const Requantized again = requantize(*out, TensorType::Q4_0, &keep);
    ASSERT_EQ(again.kept.size(), 1u);
    EXPECT_FLOAT_EQ(again.kept[0].value, -6.0f);
}

TEST(Requantize, KeepSuperWeightsRejectsCoordinatesOutsideTheTensor) {
    Writer w;
    w.add_tensor_f32("blk.0.ffn_down.weight", {32, 4}, std::vector<float>(128, 0.1f));
    std::vector<uint8_t> bytes = w.to_bytes();
    auto f = File::from_memory(bytes.data(), bytes.size(), "x.gguf");
    KeepSuperWeights keep;
    keep.weights = {{0, 4, 0}};
    EXPECT_THROW(requantize(*f, TensorType::Q4_0, &keep), std::invalid_argument);
    keep.weights = {{1, 0, 0}};
    EXPECT_THROW(requantize(*f, TensorType::Q4_0, &keep), std::invalid_argument);
}
