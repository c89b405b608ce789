// A model's Q4_0 and Q8_0 matrices uploaded with grouped blocks (ops::group_blocks; the default,
// VKLLM_GROUPED_BLOCKS=0 keeps the file's order): zoo-wide (every matrix 256-multiples wide)
// quantized by llama.cpp's mixes gives the same logits either way, bit for bit, for a prompt that
// takes the tiled matmul and for decode steps (Q, K and V stacked, gate and up fused, x quantized
// once per input, with the float and the integer dot); a weight edit lands in the grouped rows as
// in the file's order, and restoring the weights brings the logits back.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "model/model_internal.h"
#include "bit_equal.h"
#include "test_support.h"
#include "vkllm/gguf.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

using test::expect_bit_equal;

// The logits of a 20-token prompt's last token and of two decode steps after it.
std::vector<float> run(const Model& model) {
    Session s(model);
    std::vector<int32_t> prompt;
    for (int i = 0; i < 20; ++i) prompt.push_back(int32_t(1 + (i * 37) % 500));
    std::vector<float> all = s.eval(prompt);
    for (int32_t t : {21, 7}) {
        const std::vector<float> step = s.eval({t});
        all.insert(all.end(), step.begin(), step.end());
    }
    return all;
}


class GroupedBlocksModel : public ::testing::TestWithParam<const char*> {};

TEST_P(GroupedBlocksModel, LogitsAndWeightEditsEqualTheFileOrder) {
    const std::string mix = GetParam();
    const std::string path = test::temp_path("zoo-wide-" + mix + ".gguf");
    quantize_mix(test::source_dir() + "/assets/zoo/zoo-wide.gguf", path, mix);
    const WeightRef edited{0, "attn_q", 5, 77};
    // The float dot and, where the device has it, the integer dot (on lavapipe only when asked).
    for (const char* idot : {"0", "1"}) {
        test::ScopedEnv dot("VKLLM_INTEGER_DOT", idot);
        std::vector<float> logits[2], edited_logits[2];
        float old_value[2] = {0, 0};
        for (int grouped : {0, 1}) {
            test::ScopedEnv env("VKLLM_GROUPED_BLOCKS", grouped ? "1" : "0");
            std::unique_ptr<Model> model = Model::load(path);
            const model::UploadedMatrix* q = model->internals().weights().uploaded("blk.0.attn_q.weight");
            ASSERT_NE(q, nullptr);
            EXPECT_EQ(q->grouped, grouped == 1) << mix << ": blk.0.attn_q";
            logits[grouped] = run(*model);
            old_value[grouped] = model->set_weight(edited, 0.75f);
            EXPECT_NEAR(model->weight(edited), 0.75f, 0.1f) << "the edit reads back (after the type's rounding)";
            edited_logits[grouped] = run(*model);
            model->restore_weights();
            expect_bit_equal(run(*model), logits[grouped], mix + ": restored");
        }
        const std::string what = mix + " VKLLM_INTEGER_DOT=" + idot;
        expect_bit_equal(logits[1], logits[0], what);
        EXPECT_EQ(old_value[1], old_value[0]) << what;
        expect_bit_equal(edited_logits[1], edited_logits[0], what + ", edited");
        EXPECT_NE(edited_logits[1], logits[1]) << what << ": the edit changed nothing";
    }
    std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Mixes, GroupedBlocksModel, ::testing::Values("Q8_0", "Q4_0"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace vkllm
