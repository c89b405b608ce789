// Random-weight model writer (tools/random_model), the state-space family mamba2: llama.cpp's
// tensor names, shapes and types (src/models/mamba2.cpp's load_arch_tensors) and the ssm.* keys
// its converter writes.
#include "random_golden_models.h"
#include "random_model_fixture.h"

#include <cstring>

namespace {

void expect_tensors(const gguf::File& f, const std::map<std::string, std::vector<uint64_t>>& expected) {
    EXPECT_EQ(f.tensors().size(), expected.size());
    for (const auto& [name, dims] : expected) {
        const gguf::TensorInfo* t = f.find_tensor(name);
        ASSERT_NE(t, nullptr) << name;
        EXPECT_EQ(t->dims, dims) << name;
    }
}

std::vector<float> f32_values(const gguf::File& f, const std::string& name) {
    const gguf::TensorInfo& t = tensor(f, name);
    uint64_t n = 1;
    for (uint64_t d : t.dims) n *= d;
    std::vector<float> v(n);
    std::memcpy(v.data(), t.data, n * sizeof(float));
    return v;
}

}  // namespace

TEST(RandomModel, Mamba2HasTheSsmTensorsAndKeys) {
    RandomModelConfig c;
    c.arch = "mamba2";
    c.n_layer = 2;
    c.ssm_groups = 2;
    c.type = TensorType::Q8_0;
    auto f = model_file(c);
    // d_inner 128 (2 * n_embd), d_state 16, 8 heads of 16, 2 groups, 4 taps:
    // conv channels 128 + 2*2*16 = 192; in-projection 2*128 + 2*2*16 + 8 = 328.
    expect_tensors(*f, {
                           {"token_embd.weight", {64, kVocab}},
                           {"output_norm.weight", {64}},
                           {"output.weight", {64, kVocab}},
                           {"blk.0.attn_norm.weight", {64}},
                           {"blk.0.ssm_in.weight", {64, 328}},
                           {"blk.0.ssm_conv1d.weight", {4, 192}},
                           {"blk.0.ssm_conv1d.bias", {192}},
                           {"blk.0.ssm_dt.bias", {8}},
                           {"blk.0.ssm_a", {1, 8}},
                           {"blk.0.ssm_d", {1, 8}},
                           {"blk.0.ssm_norm.weight", {64, 2}},
                           {"blk.0.ssm_out.weight", {128, 64}},
                           {"blk.1.attn_norm.weight", {64}},
                           {"blk.1.ssm_in.weight", {64, 328}},
                           {"blk.1.ssm_conv1d.weight", {4, 192}},
                           {"blk.1.ssm_conv1d.bias", {192}},
                           {"blk.1.ssm_dt.bias", {8}},
                           {"blk.1.ssm_a", {1, 8}},
                           {"blk.1.ssm_d", {1, 8}},
                           {"blk.1.ssm_norm.weight", {64, 2}},
                           {"blk.1.ssm_out.weight", {128, 64}},
                       });
    EXPECT_EQ(tensor(*f, "blk.0.ssm_in.weight").type, TensorType::Q8_0);
    for (const char* small : {"blk.0.ssm_conv1d.weight", "blk.0.ssm_a", "blk.0.ssm_d", "blk.0.ssm_norm.weight"})
        EXPECT_EQ(tensor(*f, small).type, TensorType::F32) << small;
    EXPECT_EQ(f->get_int("mamba2.ssm.conv_kernel"), 4);
    EXPECT_EQ(f->get_int("mamba2.ssm.inner_size"), 128);
    EXPECT_EQ(f->get_int("mamba2.ssm.state_size"), 16);
    EXPECT_EQ(f->get_int("mamba2.ssm.time_step_rank"), 8);
    EXPECT_EQ(f->get_int("mamba2.ssm.group_count"), 2);
    EXPECT_EQ(f->get_int("mamba2.attention.head_count"), 0);  // as the converter writes them
    EXPECT_EQ(f->get_int("mamba2.feed_forward_length"), 0);
    EXPECT_FALSE(f->has("mamba2.attention.head_count_kv"));
    EXPECT_FALSE(f->has("mamba2.rope.freq_base"));

    const Stats conv = stats_of(f32_values(*f, "blk.1.ssm_conv1d.weight"));  // std 1/sqrt(4 taps)
    EXPECT_NEAR(conv.std, 0.5, 0.05);
    // A = -exp(A_log) in [-16, -1]; dt_bias = softplus^-1(dt), dt in [0.001, 0.1].
    const std::vector<float> a = f32_values(*f, "blk.0.ssm_a"), dtb = f32_values(*f, "blk.0.ssm_dt.bias");
    for (float v : a) EXPECT_TRUE(v <= -1.0f && v >= -16.0f) << v;
    for (float v : dtb) {
        const float dt = std::log1p(std::exp(v));
        EXPECT_TRUE(dt >= 0.00099f && dt <= 0.1001f) << dt;
    }
}

TEST(RandomModel, Mamba2OptionsAreCheckedAndOnlyForMamba2) {
    RandomModelConfig c;
    c.arch = "mamba2";
    c.ssm_head_dim = 24;  // does not divide d_inner 128
    EXPECT_THROW(model_file(c), ConfigError);
    c.ssm_head_dim = 16;
    c.ssm_groups = 3;  // does not divide 8 heads
    EXPECT_THROW(model_file(c), ConfigError);
    c = RandomModelConfig{};
    c.ssm_state = 32;  // llama has no SSM
    EXPECT_THROW(model_file(c), ConfigError);
    auto cl = random_model::parse_command_line(
        random_model::split_words("--arch mamba2 --ssm-conv 3 --ssm-inner 96 --ssm-state 8 --ssm-head-dim 12 "
                                  "--ssm-groups 4"),
        "d");
    auto f = model_file(cl.config);
    EXPECT_EQ(f->get_int("mamba2.ssm.conv_kernel"), 3);
    EXPECT_EQ(f->get_int("mamba2.ssm.time_step_rank"), 8);
    EXPECT_EQ(tensor(*f, "blk.0.ssm_in.weight").dims, (std::vector<uint64_t>{64, 2 * 96 + 2 * 4 * 8 + 8}));
    EXPECT_EQ(tensor(*f, "blk.0.ssm_norm.weight").dims, (std::vector<uint64_t>{24, 4}));
}

// The committed state-space goldens are what the writer makes today from tests/golden/ssm/models.txt.
TEST(RandomModel, GoldenSsmModelsAreReproducible) {
    VKLLM_REQUIRE_SHARED(shared);
    auto vocab = gguf::File::open(shared + "/models/stories260K/stories260K-F32.gguf");
    test::expect_random_golden_models_reproducible(test::source_dir() + "/tests/golden/ssm", *vocab, 14);
}
