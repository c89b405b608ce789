// MoE decode with the experts' inputs quantized once (model::expert_inputs into
// ops::moe_matvec_quantized and moe_matvec_swiglu_quantized): a random Qwen3-MoE (every matrix 256
// wide, dense matrices in Q8_0, experts in blocks of 32 or of 256) decodes the same logits with
// the quantized inputs as with the activations rounded as before (VKLLM_MATVEC_XQ=0: rounded in
// the expert matvecs, or by a rounding dispatch for the blocks of 256), bit for bit (the float
// dot: the same values in the same sums). The integer dot's sums differ from the float dot's in
// the last bits, and on this random model that moved one decode step's logits by 2e-3 of their
// scale with two layers (the last layer's FFN only: the later steps agreed to 1e-7, as an expert
// choice tipped there would do) and every step with three: test_quantize_activations holds that
// path to the float dot op by op instead.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bit_equal.h"
#include "random_model_fixture.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace {

// The logits of three decode steps after a 6-token prompt.
std::vector<float> decode_logits(const std::string& path) {
    std::unique_ptr<Model> model = Model::load(path);
    Session s(*model);
    s.eval({1, 5, 9, 13, 17, 21});
    std::vector<float> all;
    for (int32_t t : {7, 30, 11}) {
        const std::vector<float> step = s.eval({t});
        all.insert(all.end(), step.begin(), step.end());
    }
    return all;
}

class QuantizedExperts : public ::testing::TestWithParam<TensorType> {};

TEST_P(QuantizedExperts, DecodeEqualsTheRoundedInputs) {
    RandomModelConfig c;
    c.arch = "qwen3moe";
    c.n_embd = 256;
    c.n_ff = 256;
    c.n_ff_exp = 256;
    c.n_head = 4;
    c.n_head_kv = 2;
    c.n_expert = 8;
    c.n_expert_used = 2;
    c.type = TensorType::Q8_0;
    c.expert_type = GetParam();
    c.seed = 5;
    const std::string name = gguf::type_traits(GetParam())->name;
    const std::vector<uint8_t> bytes = model_bytes(c);
    const std::string path =
        test::write_temp_file("quantized-experts-" + name + ".gguf", std::string(bytes.begin(), bytes.end()));
    // Down's input, one row per pair, is quantized on GPUs only: forced here.
    test::ScopedEnv single("VKLLM_MATVEC_XQ_SINGLE", "1");
    test::ScopedEnv dot("VKLLM_INTEGER_DOT", "0");
    std::vector<float> logits[2];
    for (int xq : {0, 1}) {
        test::ScopedEnv env("VKLLM_MATVEC_XQ", xq ? "1" : "0");
        logits[xq] = decode_logits(path);
    }
    test::expect_bit_equal(logits[1], logits[0], name + " experts");
    std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Types, QuantizedExperts, ::testing::Values(TensorType::Q4_0, TensorType::Q4_K, TensorType::Q6_K),
                         [](const auto& info) { return std::string(gguf::type_traits(info.param)->name); });

}  // namespace
