// The super-weight finder (vkllm/super_weights.h) on models with a planted super weight
// (vkllm-random-model --plant-super-weight) of three families, dense and MoE: it returns exactly
// the planted element, zeroing it removes the massive activation, and the GPU forward with it
// zeroed equals the forward of a file written with that weight 0 (and the CPU reference of it).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gpu/device.h"
#include "model/model_internal.h"
#include "model/reference_forward.h"
#include "random_model/random_model.h"
#include "test_support.h"
#include "vkllm/model.h"
#include "vkllm/session.h"
#include "vkllm/super_weights.h"

namespace vkllm {
namespace {

std::string zoo(const std::string& name) { return test::source_dir() + "/assets/zoo/" + name + ".gguf"; }

random_model::RandomModelConfig planted(const std::string& arch, int layer, int64_t row, int64_t col, int expert = -1) {
    random_model::RandomModelConfig c;
    c.arch = arch;
    c.seed = 5;
    c.n_layer = 3;
    c.plant = random_model::PlantedSuperWeight{layer, row, col, expert};
    return c;
}

std::vector<uint8_t> image_of(const random_model::RandomModelConfig& c) {
    auto vocab = gguf::File::open(zoo("zoo-dense"));  // its SentencePiece vocabulary, with BOS
    return random_model::build_random_model(c, *vocab).to_bytes();
}

std::unique_ptr<Model> load(const std::vector<uint8_t>& image, const std::string& name) {
    return Model::load_from_memory(image.data(), image.size(), name);
}

// `f` again with one F32 element of one tensor set (PyTorch's weight[row, col]).
std::vector<uint8_t> with_element(const gguf::File& f, const std::string& tensor, int64_t row, int64_t col, float v) {
    gguf::Writer w;
    for (const std::string& key : f.keys_in_order()) w.set(key, *f.find(key));
    for (const gguf::TensorInfo& t : f.tensors()) {
        std::vector<uint8_t> bytes(t.data, t.data + t.n_bytes);
        if (t.name == tensor) {
            EXPECT_EQ(t.type, gguf::TensorType::F32);
            std::memcpy(bytes.data() + (uint64_t(row) * t.dims[0] + uint64_t(col)) * sizeof(float), &v, sizeof v);
        }
        w.add_tensor(t.name, t.type, t.dims, std::move(bytes));
    }
    return w.to_bytes();
}

class SuperWeightTest : public ::testing::Test {
protected:
    void SetUp() override { errors_before_ = gpu::validation_error_count(); }
    void TearDown() override { EXPECT_EQ(gpu::validation_error_count(), errors_before_); }

    // The finder returns exactly the planted element, and zeroing it ends the massive activation.
    void expect_found_exactly(Model& model, int layer, const std::string& tensor, int64_t row, int64_t col, int expert) {
        const SuperWeightReport r = find_super_weights(model);
        ASSERT_EQ(r.super_weights.size(), 1u) << "super weights found: " << r.super_weights.size();
        const SuperWeight& s = r.super_weights[0];
        EXPECT_EQ(s.layer, layer);
        EXPECT_EQ(s.tensor, tensor);
        EXPECT_EQ(s.row, row);
        EXPECT_EQ(s.col, col);
        EXPECT_EQ(s.expert, expert);
        EXPECT_NEAR(s.value, random_model::PlantConstants::super_weight, 0.05);
        EXPECT_GT(s.weight_ratio, 20.0f);
        EXPECT_EQ(s.token, 0);  // BOS
        EXPECT_EQ(s.activation.layer, layer);
        EXPECT_EQ(s.activation.channel, row);
        EXPECT_GT(std::fabs(s.activation.value), 1000.0f);
        EXPECT_LT(std::fabs(s.activation_after_zeroing), 20.0f);
        // The massive activation: from the planted layer on, and nowhere once it is zeroed.
        for (const LayerActivation& a : r.layers) {
            EXPECT_EQ(a.sun_massive, a.layer >= layer) << "layer " << a.layer;
            if (a.layer >= layer) {
                EXPECT_EQ(a.max.channel, row);
            }
        }
        ASSERT_EQ(r.layers_after.size(), r.layers.size());
        for (const LayerActivation& a : r.layers_after) EXPECT_FALSE(a.sun_massive) << "layer " << a.layer;
        // The model is left as it was.
        EXPECT_TRUE(model.weight_edits().empty());
        EXPECT_EQ(model.weight({layer, tensor, row, col, expert}), s.value);
    }

private:
    uint64_t errors_before_ = 0;
};

TEST_F(SuperWeightTest, PlantedLlamaIsFoundExactly) {
    auto model = load(image_of(planted("llama", 1, 10, 20)), "planted-llama");
    expect_found_exactly(*model, 1, "ffn_down", 10, 20, -1);
}

TEST_F(SuperWeightTest, PlantedQwen2Q8_0InTheFirstLayerIsFoundExactly) {
    random_model::RandomModelConfig c = planted("qwen2", 0, 63, 159);
    c.type = gguf::TensorType::Q8_0;
    auto model = load(image_of(c), "planted-qwen2-q8_0");
    expect_found_exactly(*model, 0, "ffn_down", 63, 159, -1);
}

TEST_F(SuperWeightTest, PlantedMixtralExpertIsFoundPerExpert) {
    random_model::RandomModelConfig c = planted("llama", 2, 5, 77, 3);
    c.n_expert = 4;
    auto model = load(image_of(c), "planted-mixtral");
    expect_found_exactly(*model, 2, "ffn_down_exps", 5, 77, 3);
}

TEST_F(SuperWeightTest, ZooModelsHaveNone) {
    for (const char* name : {"zoo-dense", "zoo-moe"}) {
        auto model = Model::load(zoo(name));
        const SuperWeightReport r = find_super_weights(*model);
        EXPECT_TRUE(r.super_weights.empty()) << name;
        EXPECT_EQ(r.passes, 1) << name;
        for (const LayerActivation& a : r.layers) EXPECT_FALSE(a.sun_massive) << name << " layer " << a.layer;
        ASSERT_FALSE(r.sinks.empty());
        for (const SinkMass& s : r.sinks) {
            EXPECT_GE(s.first_token_mass, 0.0f);
            EXPECT_LE(s.first_token_mass, 1.0f + 1e-5f);
        }
    }
}

// What zeroing the super weight does to the output is what a file with that weight 0 gives.
TEST_F(SuperWeightTest, ZeroingFollowsTheEditedFileAndTheReference) {
    const std::vector<uint8_t> image = image_of(planted("llama", 1, 10, 20));
    auto model = load(image, "planted-llama");
    const std::vector<int32_t> prompt = model->tokenize("Once upon a time, Tom saw a big dog", true);
    SessionOptions so;
    so.n_ctx = 64;
    so.llama_cpp_rounding = false;
    std::vector<float> planted_logits, zeroed_logits;
    {
        Session s(*model, so);
        planted_logits = s.eval(prompt, true);
        model->set_weight({1, "ffn_down", 10, 20, -1}, 0.0f);
        s.reset();
        zeroed_logits = s.eval(prompt, true);
        model->restore_weights();
    }
    auto file = gguf::File::from_memory(image.data(), image.size(), "planted");
    const std::vector<uint8_t> edited = with_element(*file, "blk.1.ffn_down.weight", 10, 20, 0.0f);
    auto edited_model = load(edited, "planted-llama-zeroed");
    Session s(*edited_model, so);
    const std::vector<float> file_logits = s.eval(prompt, true);
    ASSERT_EQ(zeroed_logits.size(), file_logits.size());
    EXPECT_EQ(test::max_abs_diff(zeroed_logits, file_logits), 0.0);  // the same F32 weights, the same kernels

    auto edited_file = gguf::File::from_memory(edited.data(), edited.size(), "planted-zeroed");
    model::ReferenceForward ref(*edited_file, edited_model->internals().spec(), so.n_ctx, /*round_activations=*/false);
    const std::vector<float> ref_logits = ref.eval(prompt);
    EXPECT_LT(test::max_abs_diff(zeroed_logits, ref_logits), 2e-3);
    // ... and it matters: the planted model's logits are far from those.
    EXPECT_GT(test::max_abs_diff(planted_logits, zeroed_logits), 0.1);
}

TEST_F(SuperWeightTest, WeightMagnitudeReadsTheFile) {
    auto model = load(image_of(planted("llama", 1, 10, 20)), "planted-llama");
    const WeightMagnitude m = weight_magnitude(*model, 1, "ffn_down");
    EXPECT_EQ(m.n, 160u * 64u);
    EXPECT_FLOAT_EQ(float(m.max_abs), random_model::PlantConstants::super_weight);
    // normal(0, 1/sqrt(160)): median |w| = 0.674 / sqrt(160) = 0.053
    EXPECT_NEAR(m.median_abs, 0.674 / std::sqrt(160.0), 0.006);
    EXPECT_THROW(weight_magnitude(*model, 1, "ffn_nope"), std::invalid_argument);
    EXPECT_THROW(weight_magnitude(*model, 1, "ffn_down", 2), std::invalid_argument);
}

// --plant-super-weight's errors name the option and what is wrong.
TEST(PlantSuperWeight, BadPlantsAreConfigErrors) {
    auto vocab = gguf::File::open(zoo("zoo-dense"));
    auto message = [&](random_model::RandomModelConfig c) -> std::string {
        try {
            random_model::build_random_model(c, *vocab);
        } catch (const random_model::ConfigError& e) {
            return e.what();
        }
        return "(no error)";
    };
    EXPECT_NE(message(planted("gemma3", 0, 1, 2)).find("not gemma3"), std::string::npos);
    EXPECT_NE(message(planted("llama", 3, 1, 2)).find("layer 3 is not below --n-layer 3"), std::string::npos);
    EXPECT_NE(message(planted("llama", 0, 64, 2)).find("row 64 is not below --n-embd 64"), std::string::npos);
    EXPECT_NE(message(planted("llama", 0, 1, 160)).find("col 160 is not below the FFN width 160"), std::string::npos);
    EXPECT_NE(message(planted("llama", 0, 1, 2, 0)).find("has no experts"), std::string::npos);
    random_model::RandomModelConfig moe = planted("llama", 0, 1, 2, 4);
    moe.n_expert = 4;
    EXPECT_NE(message(moe).find("expert 4 is not below --n-expert 4"), std::string::npos);
    EXPECT_THROW(random_model::parse_planted_super_weight("1:2"), random_model::ConfigError);
    EXPECT_THROW(random_model::parse_planted_super_weight("1:-2:3"), random_model::ConfigError);
    const random_model::PlantedSuperWeight p = random_model::parse_planted_super_weight("2:5:77:3");
    EXPECT_EQ(p.layer, 2);
    EXPECT_EQ(p.row, 5);
    EXPECT_EQ(p.col, 77);
    EXPECT_EQ(p.expert, 3);
}

}  // namespace
}  // namespace vkllm
