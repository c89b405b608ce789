// Random-weight model writer (tools/random_model): determinism, the metadata and tensors it
// writes (read back with gguf::File), weight statistics, quantization fallbacks, configuration
// errors, and that ModelSpec::from_gguf accepts its llama output. Loading in llama.cpp is checked
// by tools/random_model/check_oracle.sh (it needs the oracle installed).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <unistd.h>

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "model/spec.h"
#include "random_model/command_line.h"
#include "random_model/random_model.h"
#include "random_model/random_weights.h"
#include "test_support.h"

using namespace vkllm;
using random_model::ConfigError;
using random_model::RandomModelConfig;
using random_model::RopeScalingConfig;
using gguf::TensorType;

namespace {

constexpr int kVocab = 40;

// A tiny SentencePiece-style vocabulary, so that these tests need no shared files.
std::unique_ptr<gguf::File> tiny_vocab() {
    gguf::Writer w;
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;
    for (int i = 0; i < kVocab; ++i) {
        tokens.push_back(i == 0 ? "<unk>" : i == 1 ? "<s>" : i == 2 ? "</s>" : "t" + std::to_string(i));
        scores.push_back(-float(i));
        types.push_back(i < 3 ? 3 : 1);
    }
    w.set("general.architecture", gguf::Value::from_string("llama"));  // not copied: only tokenizer.*
    w.set("tokenizer.ggml.model", gguf::Value::from_string("llama"));
    w.set("tokenizer.ggml.tokens", gguf::Value::from_strings(tokens));
    w.set("tokenizer.ggml.scores", gguf::Value::from_f32s(scores));
    w.set("tokenizer.ggml.token_type", gguf::Value::from_i32s(types));
    w.set("tokenizer.ggml.bos_token_id", gguf::Value::from_u32(1));
    w.set("tokenizer.ggml.eos_token_id", gguf::Value::from_u32(2));
    w.set("tokenizer.ggml.add_bos_token", gguf::Value::from_bool(true));
    auto bytes = w.to_bytes();
    return gguf::File::from_memory(bytes.data(), bytes.size(), "tiny-vocab.gguf");
}

std::vector<uint8_t> model_bytes(const RandomModelConfig& c) {
    return random_model::build_random_model(c, *tiny_vocab()).to_bytes();
}

std::unique_ptr<gguf::File> model_file(const RandomModelConfig& c) {
    auto bytes = model_bytes(c);
    return gguf::File::from_memory(bytes.data(), bytes.size(), "random.gguf");
}

const gguf::TensorInfo& tensor(const gguf::File& f, const std::string& name) {
    const gguf::TensorInfo* t = f.find_tensor(name);
    if (!t) throw std::runtime_error("no tensor " + name);
    return *t;
}

struct Stats {
    double mean, std;
};
Stats stats_of(const std::vector<float>& v) {
    double sum = std::accumulate(v.begin(), v.end(), 0.0), sq = 0;
    const double mean = sum / double(v.size());
    for (float x : v) sq += (x - mean) * (x - mean);
    return {mean, std::sqrt(sq / double(v.size()))};
}

// Runs `fn`, expects a ConfigError whose message contains `needle`.
template <typename Fn>
void expect_config_error(Fn fn, const std::string& needle) {
    try {
        fn();
        ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
}

}  // namespace

TEST(RandomModel, SameSeedSameBytesOtherSeedOtherBytes) {
    RandomModelConfig c;
    c.seed = 7;
    c.type = TensorType::Q8_0;
    const auto a = model_bytes(c), b = model_bytes(c);
    EXPECT_EQ(a, b);
    c.seed = 8;
    const auto other = model_bytes(c);
    EXPECT_EQ(other.size(), a.size());
    EXPECT_NE(other, a);
}

TEST(RandomModel, TensorValuesDoNotDependOnTheOtherTensors) {
    RandomModelConfig two;
    two.seed = 3;
    RandomModelConfig three = two;
    three.n_layer = 3;
    auto f2 = model_file(two), f3 = model_file(three);
    for (const char* name : {"token_embd.weight", "blk.0.attn_q.weight", "blk.1.ffn_down.weight", "output.weight"})
        EXPECT_EQ(gguf::dequantize_tensor(tensor(*f2, name)), gguf::dequantize_tensor(tensor(*f3, name))) << name;
    // ...while tensors of different names differ.
    EXPECT_NE(gguf::dequantize_tensor(tensor(*f2, "blk.0.ffn_gate.weight")),
              gguf::dequantize_tensor(tensor(*f2, "blk.0.ffn_up.weight")));
}

TEST(RandomModel, LlamaMetadataAndTensorsReadBack) {
    RandomModelConfig c;
    c.n_embd = 64;
    c.n_layer = 2;
    c.n_head = 4;
    c.n_head_kv = 2;
    c.head_dim = 32;  // != n_embd / n_head: key_length and value_length are written
    c.n_ff = 96;
    c.n_ctx = 300;
    c.type = TensorType::Q8_0;
    auto f = model_file(c);
    auto vocab = tiny_vocab();

    EXPECT_EQ(f->get_string("general.architecture"), "llama");
    EXPECT_EQ(f->get_string("general.name"), "random-llama");
    EXPECT_EQ(f->get_int("general.file_type"), 7);  // LLAMA_FTYPE_MOSTLY_Q8_0
    EXPECT_EQ(f->get_int("llama.vocab_size"), kVocab);
    EXPECT_EQ(f->get_int("llama.context_length"), 300);
    EXPECT_EQ(f->get_int("llama.embedding_length"), 64);
    EXPECT_EQ(f->get_int("llama.block_count"), 2);
    EXPECT_EQ(f->get_int("llama.feed_forward_length"), 96);
    EXPECT_EQ(f->get_int("llama.attention.head_count"), 4);
    EXPECT_EQ(f->get_int("llama.attention.head_count_kv"), 2);
    EXPECT_EQ(f->get_int("llama.attention.key_length"), 32);
    EXPECT_EQ(f->get_int("llama.attention.value_length"), 32);
    EXPECT_EQ(f->get_int("llama.rope.dimension_count"), 32);
    EXPECT_FLOAT_EQ(float(*f->get_float("llama.rope.freq_base")), 10000.0f);
    EXPECT_FLOAT_EQ(float(*f->get_float("llama.attention.layer_norm_rms_epsilon")), 1e-5f);
    EXPECT_FALSE(f->has("llama.rope.scaling.type"));
    EXPECT_FALSE(f->has("llama.attention.sliding_window"));

    // Every tokenizer key is copied, nothing else from the vocabulary file.
    for (const std::string& key : vocab->keys_in_order()) {
        if (key.rfind("tokenizer.", 0) != 0) continue;
        ASSERT_TRUE(f->has(key)) << key;
    }
    EXPECT_EQ(f->get_strings("tokenizer.ggml.tokens"), vocab->get_strings("tokenizer.ggml.tokens"));
    EXPECT_EQ(f->get_floats("tokenizer.ggml.scores"), vocab->get_floats("tokenizer.ggml.scores"));
    EXPECT_EQ(f->get_ints("tokenizer.ggml.token_type"), vocab->get_ints("tokenizer.ggml.token_type"));
    EXPECT_EQ(f->get_bool("tokenizer.ggml.add_bos_token"), true);

    struct Expected {
        std::string name;
        std::vector<uint64_t> dims;
        TensorType type;
    };
    std::vector<Expected> expected = {
        {"token_embd.weight", {64, kVocab}, TensorType::Q8_0},
        {"output_norm.weight", {64}, TensorType::F32},
        {"output.weight", {64, kVocab}, TensorType::Q8_0},
    };
    for (int l = 0; l < 2; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        for (const Expected& e : std::vector<Expected>{
                 {p + "attn_norm.weight", {64}, TensorType::F32},
                 {p + "attn_q.weight", {64, 128}, TensorType::Q8_0},
                 {p + "attn_k.weight", {64, 64}, TensorType::Q8_0},
                 {p + "attn_v.weight", {64, 64}, TensorType::Q8_0},
                 {p + "attn_output.weight", {128, 64}, TensorType::Q8_0},
                 {p + "ffn_norm.weight", {64}, TensorType::F32},
                 {p + "ffn_gate.weight", {64, 96}, TensorType::Q8_0},
                 {p + "ffn_up.weight", {64, 96}, TensorType::Q8_0},
                 {p + "ffn_down.weight", {96, 64}, TensorType::Q8_0},
             })
            expected.push_back(e);
    }
    ASSERT_EQ(f->tensors().size(), expected.size());
    for (const Expected& e : expected) {
        const gguf::TensorInfo* t = f->find_tensor(e.name);
        ASSERT_NE(t, nullptr) << e.name;
        EXPECT_EQ(t->dims, e.dims) << e.name;
        EXPECT_EQ(t->type, e.type) << e.name;
    }
}

TEST(RandomModel, TiedHasNoOutputTensor) {
    RandomModelConfig c;
    c.tied = true;
    auto f = model_file(c);
    EXPECT_EQ(f->find_tensor("output.weight"), nullptr);
    EXPECT_NE(f->find_tensor("token_embd.weight"), nullptr);
}

TEST(RandomModel, WeightsHaveTheIntendedScale) {
    RandomModelConfig c;
    c.n_embd = 256;
    c.n_head = 4;
    c.n_head_kv = 4;
    c.n_ff = 320;
    auto f = model_file(c);
    // Matrices: std 1/sqrt(n_in), so a projection keeps its input's scale.
    for (auto [name, n_in] : {std::pair<const char*, double>{"blk.0.attn_q.weight", 256}, {"blk.1.ffn_down.weight", 320},
                              {"output.weight", 256}}) {
        Stats s = stats_of(gguf::dequantize_tensor(tensor(*f, name)));
        EXPECT_NEAR(s.mean, 0.0, 0.05 / std::sqrt(n_in)) << name;
        EXPECT_NEAR(s.std, 1.0 / std::sqrt(n_in), 0.03 / std::sqrt(n_in)) << name;
    }
    Stats e = stats_of(gguf::dequantize_tensor(tensor(*f, "token_embd.weight")));
    EXPECT_NEAR(e.std, 1.0 / 16.0, 0.1 / 16.0);
    // Norm weights: near 1 with a little noise.
    std::vector<float> norms;
    for (const char* name : {"output_norm.weight", "blk.0.attn_norm.weight", "blk.0.ffn_norm.weight", "blk.1.attn_norm.weight"}) {
        auto v = gguf::dequantize_tensor(tensor(*f, name));
        norms.insert(norms.end(), v.begin(), v.end());
    }
    Stats n = stats_of(norms);
    EXPECT_NEAR(n.mean, 1.0, 0.02);
    EXPECT_NEAR(n.std, 0.1, 0.015);
}

TEST(RandomModel, NormalApproximationHasUnitVarianceAndIsSymmetric) {
    random_model::Rng rng(123, "stream");
    std::vector<float> v = random_model::normal_values(rng, 200000, 0.0, 1.0);
    Stats s = stats_of(v);
    EXPECT_NEAR(s.mean, 0.0, 0.01);
    EXPECT_NEAR(s.std, 1.0, 0.01);
    size_t beyond_one = 0;
    for (float x : v) beyond_one += std::fabs(x) > 1.0f;
    // Irwin-Hall(4), standardized, puts 33.07% outside one std (a Gaussian 31.73%): for the sum S
    // of four U(0,1), |S - 2| > 1/sqrt(3), twice the Irwin-Hall CDF at 2 - 1/sqrt(3).
    EXPECT_NEAR(double(beyond_one) / double(v.size()), 0.3307, 0.005);
    random_model::Rng other(124, "stream");
    EXPECT_NE(random_model::normal_values(other, 8, 0.0, 1.0), std::vector<float>(v.begin(), v.begin() + 8));
}

TEST(RandomModel, QuantizedModelsQuantizeTheSameValues) {
    RandomModelConfig c;
    c.seed = 11;
    auto f32 = model_file(c);
    c.type = TensorType::Q8_0;
    auto q8 = model_file(c);
    auto ref = gguf::dequantize_tensor(tensor(*f32, "blk.0.attn_v.weight"));
    auto got = gguf::dequantize_tensor(tensor(*q8, "blk.0.attn_v.weight"));
    EXPECT_LT(test::nmse(got, ref), 1e-4);
    // 1-D tensors are never quantized.
    EXPECT_EQ(gguf::dequantize_tensor(tensor(*f32, "blk.0.attn_norm.weight")),
              gguf::dequantize_tensor(tensor(*q8, "blk.0.attn_norm.weight")));
}

TEST(RandomModel, MatrixTypeFallsBackLikeLlamaCppQuantizer) {
    using random_model::matrix_storage_type;
    EXPECT_EQ(matrix_storage_type(TensorType::Q4_K, 512), TensorType::Q4_K);
    EXPECT_EQ(matrix_storage_type(TensorType::Q4_K, 160), TensorType::Q5_0);
    EXPECT_EQ(matrix_storage_type(TensorType::Q5_K, 96), TensorType::Q5_1);
    EXPECT_EQ(matrix_storage_type(TensorType::Q6_K, 64), TensorType::Q8_0);
    EXPECT_EQ(matrix_storage_type(TensorType::Q3_K, 64), TensorType::Q4_0);
    EXPECT_EQ(matrix_storage_type(TensorType::Q4_K, 100), TensorType::F16);
    EXPECT_EQ(matrix_storage_type(TensorType::Q8_0, 100), TensorType::F16);
    EXPECT_EQ(matrix_storage_type(TensorType::F32, 7), TensorType::F32);
    EXPECT_EQ(matrix_storage_type(TensorType::BF16, 7), TensorType::BF16);

    RandomModelConfig c;
    c.n_embd = 256;
    c.n_head = 4;
    c.n_head_kv = 4;
    c.n_ff = 160;
    c.type = TensorType::Q4_K;
    auto f = model_file(c);
    EXPECT_EQ(tensor(*f, "blk.0.attn_q.weight").type, TensorType::Q4_K);
    EXPECT_EQ(tensor(*f, "blk.0.ffn_up.weight").type, TensorType::Q4_K);
    EXPECT_EQ(tensor(*f, "blk.0.ffn_down.weight").type, TensorType::Q5_0);  // rows of 160
    EXPECT_EQ(f->get_int("general.file_type"), 15);                          // LLAMA_FTYPE_MOSTLY_Q4_K_M
}

TEST(RandomModel, RopeScalingMetadataAndLlama3Factors) {
    RandomModelConfig c;
    c.rope_scaling = random_model::parse_rope_scaling("linear:4");
    auto lin = model_file(c);
    EXPECT_EQ(lin->get_string("llama.rope.scaling.type"), "linear");
    EXPECT_FLOAT_EQ(float(*lin->get_float("llama.rope.scaling.factor")), 4.0f);
    EXPECT_FALSE(lin->has("llama.rope.scaling.original_context_length"));

    c.rope_scaling = random_model::parse_rope_scaling("yarn:2.5:128");
    auto yarn = model_file(c);
    EXPECT_EQ(yarn->get_string("llama.rope.scaling.type"), "yarn");
    EXPECT_FLOAT_EQ(float(*yarn->get_float("llama.rope.scaling.factor")), 2.5f);
    EXPECT_EQ(yarn->get_int("llama.rope.scaling.original_context_length"), 128);

    // head_dim 16, base 10000: wavelengths 2*pi*10000^(i/16) for i = 0, 2, ..., 14. With an
    // original context of 8192 and factors low 1 / high 4, wavelengths below 2048 (i <= 10)
    // keep 1, above 8192 (i = 14) take the factor 8, and i = 12 (wavelength 2000*pi = 6283.2)
    // interpolates: smooth = (8192/6283.2 - 1)/3, factor 1/((1 - smooth)/8 + smooth) = 4.6815.
    c.rope_scaling = random_model::parse_rope_scaling("llama3:8:1:4:8192");
    auto l3 = model_file(c);
    EXPECT_FALSE(l3->has("llama.rope.scaling.type"));  // as convert_hf_to_gguf.py writes Llama 3
    const gguf::TensorInfo& freqs = tensor(*l3, "rope_freqs.weight");
    EXPECT_EQ(freqs.type, TensorType::F32);
    auto v = gguf::dequantize_tensor(freqs);
    ASSERT_EQ(v.size(), 8u);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(v[size_t(i)], 1.0f) << i;
    EXPECT_NEAR(v[6], 4.68148, 1e-4);
    EXPECT_EQ(v[7], 8.0f);
}

TEST(RandomModel, SpecMappingAcceptsTheLlamaOutput) {
    RandomModelConfig c;
    c.n_embd = 96;
    c.n_layer = 3;
    c.n_head = 6;
    c.n_head_kv = 2;
    c.head_dim = 24;
    c.n_ff = 200;
    c.n_ctx = 512;
    c.rope_freq_base = 50000.0f;
    c.type = TensorType::F16;
    auto f = model_file(c);
    model::ModelSpec s = model::ModelSpec::from_gguf(*f);
    EXPECT_EQ(s.arch, "llama");
    EXPECT_EQ(s.n_layer, 3);
    EXPECT_EQ(s.n_embd, 96);
    EXPECT_EQ(s.n_vocab, kVocab);
    EXPECT_EQ(s.n_ctx_train, 512);
    EXPECT_FALSE(s.tied_embeddings);
    ASSERT_EQ(s.layers.size(), 3u);
    for (const model::LayerSpec& L : s.layers) {
        EXPECT_EQ(L.attn.n_head, 6);
        EXPECT_EQ(L.attn.n_head_kv, 2);
        EXPECT_EQ(L.attn.head_dim, 24);
        EXPECT_EQ(L.attn.rope.n_dims, 24);
        EXPECT_FLOAT_EQ(L.attn.rope.freq_base, 50000.0f);
        EXPECT_EQ(L.attn.rope.scaling, model::RopeScaling::None);
        EXPECT_EQ(L.ffn.n_ff, 200);
    }

    c.tied = true;
    c.rope_scaling = random_model::parse_rope_scaling("yarn:4:128");
    s = model::ModelSpec::from_gguf(*model_file(c));
    EXPECT_TRUE(s.tied_embeddings);
    EXPECT_EQ(s.layers[0].attn.rope.scaling, model::RopeScaling::Yarn);
    EXPECT_FLOAT_EQ(s.layers[0].attn.rope.factor, 4.0f);
    EXPECT_EQ(s.layers[0].attn.rope.n_ctx_orig, 128);

    c.rope_scaling = random_model::parse_rope_scaling("llama3:8:1:4:128");
    s = model::ModelSpec::from_gguf(*model_file(c));
    EXPECT_TRUE(s.layers[0].attn.rope.freq_factors);
}

TEST(RandomModel, OtherFamiliesHaveTheirTensorsAndKeys) {
    RandomModelConfig c;
    c.arch = "qwen2";
    auto qwen2 = model_file(c);
    EXPECT_EQ(qwen2->get_string("general.architecture"), "qwen2");
    EXPECT_EQ(tensor(*qwen2, "blk.1.attn_q.bias").dims, (std::vector<uint64_t>{64}));
    EXPECT_EQ(tensor(*qwen2, "blk.1.attn_k.bias").dims, (std::vector<uint64_t>{32}));
    EXPECT_EQ(tensor(*qwen2, "blk.1.attn_v.bias").type, TensorType::F32);
    EXPECT_FLOAT_EQ(float(*qwen2->get_float("qwen2.rope.freq_base")), 1e6f);

    c.arch = "qwen3";
    c.head_dim = 32;
    auto qwen3 = model_file(c);
    EXPECT_EQ(tensor(*qwen3, "blk.0.attn_q_norm.weight").dims, (std::vector<uint64_t>{32}));
    EXPECT_EQ(tensor(*qwen3, "blk.0.attn_k_norm.weight").dims, (std::vector<uint64_t>{32}));
    EXPECT_EQ(tensor(*qwen3, "blk.0.attn_q.weight").dims, (std::vector<uint64_t>{64, 128}));
    EXPECT_EQ(qwen3->find_tensor("blk.0.attn_q.bias"), nullptr);

    c.arch = "gemma2";
    c.head_dim = 0;
    c.tied = false;  // Gemma 2 is always tied: llama.cpp has no output.weight for it
    auto gemma2 = model_file(c);
    EXPECT_EQ(gemma2->find_tensor("output.weight"), nullptr);
    EXPECT_NE(gemma2->find_tensor("blk.1.post_attention_norm.weight"), nullptr);
    EXPECT_NE(gemma2->find_tensor("blk.1.post_ffw_norm.weight"), nullptr);
    EXPECT_EQ(gemma2->get_int("gemma2.attention.key_length"), 16);  // written even when n_embd/n_head
    EXPECT_EQ(gemma2->get_int("gemma2.attention.sliding_window"), 4096);
    EXPECT_FLOAT_EQ(float(*gemma2->get_float("gemma2.attn_logit_softcapping")), 50.0f);
    EXPECT_FLOAT_EQ(float(*gemma2->get_float("gemma2.final_logit_softcapping")), 30.0f);

    c.arch = "gemma3";
    c.sliding_window = 5;
    auto gemma3 = model_file(c);
    EXPECT_NE(gemma3->find_tensor("output.weight"), nullptr);
    EXPECT_NE(gemma3->find_tensor("blk.0.attn_k_norm.weight"), nullptr);
    EXPECT_NE(gemma3->find_tensor("blk.0.post_ffw_norm.weight"), nullptr);
    EXPECT_EQ(gemma3->get_int("gemma3.attention.sliding_window"), 5);
    EXPECT_FLOAT_EQ(float(*gemma3->get_float("gemma3.rope.freq_base_swa")), 10000.0f);

    for (const std::string& arch : random_model::architectures()) {
        c = RandomModelConfig{};
        c.arch = arch;
        if (arch == "gpt2" || arch == "olmoe") c.n_head_kv = c.n_head;  // MHA only
        if (arch == "deepseek2") c.n_head_kv = 1;  // latent attention: one kv head
        EXPECT_EQ(model_file(c)->get_string("general.architecture"), arch);
    }
}

// Expects exactly these tensors (name -> dims) in `f`.
void expect_tensors(const gguf::File& f, const std::map<std::string, std::vector<uint64_t>>& expected) {
    EXPECT_EQ(f.tensors().size(), expected.size());
    for (const auto& [name, dims] : expected) {
        const gguf::TensorInfo* t = f.find_tensor(name);
        ASSERT_NE(t, nullptr) << name;
        EXPECT_EQ(t->dims, dims) << name;
    }
}

TEST(RandomModel, Gpt2HasLayerNormBiasesPositionsAndFusedQkv) {
    RandomModelConfig c;
    c.arch = "gpt2";
    c.n_head = c.n_head_kv = 4;
    c.n_ff = 96;
    c.n_ctx = 100;
    c.n_layer = 1;
    auto f = model_file(c);
    expect_tensors(*f, {
                           {"token_embd.weight", {64, kVocab}},
                           {"position_embd.weight", {64, 100}},
                           {"output_norm.weight", {64}},
                           {"output_norm.bias", {64}},
                           {"output.weight", {64, kVocab}},
                           {"blk.0.attn_norm.weight", {64}},
                           {"blk.0.attn_norm.bias", {64}},
                           {"blk.0.attn_qkv.weight", {64, 192}},  // rows [q; k; v]
                           {"blk.0.attn_qkv.bias", {192}},
                           {"blk.0.attn_output.weight", {64, 64}},
                           {"blk.0.attn_output.bias", {64}},
                           {"blk.0.ffn_norm.weight", {64}},
                           {"blk.0.ffn_norm.bias", {64}},
                           {"blk.0.ffn_up.weight", {64, 96}},
                           {"blk.0.ffn_up.bias", {96}},
                           {"blk.0.ffn_down.weight", {96, 64}},
                           {"blk.0.ffn_down.bias", {64}},
                       });
    // GPT-2's converter writes LayerNorm's epsilon, no head_count_kv and no RoPE keys.
    EXPECT_FLOAT_EQ(float(*f->get_float("gpt2.attention.layer_norm_epsilon")), 1e-5f);
    EXPECT_FALSE(f->has("gpt2.attention.layer_norm_rms_epsilon"));
    EXPECT_FALSE(f->has("gpt2.attention.head_count_kv"));
    EXPECT_FALSE(f->has("gpt2.rope.freq_base"));
    EXPECT_FALSE(f->has("gpt2.rope.dimension_count"));
    EXPECT_EQ(f->get_int("gpt2.context_length"), 100);
    // LayerNorm biases are small, position embeddings are embedding-scaled.
    Stats b = stats_of(gguf::dequantize_tensor(tensor(*f, "blk.0.attn_qkv.bias")));
    EXPECT_NEAR(b.std, 0.1, 0.03);
    Stats p = stats_of(gguf::dequantize_tensor(tensor(*f, "position_embd.weight")));
    EXPECT_NEAR(p.std, 1.0 / 8.0, 0.02);

    c.tied = true;
    EXPECT_EQ(model_file(c)->find_tensor("output.weight"), nullptr);
}

TEST(RandomModel, Olmo2HasPostNormsAndFullWidthQkNorm) {
    RandomModelConfig c;
    c.arch = "olmo2";
    c.n_layer = 1;
    c.n_ff = 96;
    auto f = model_file(c);
    expect_tensors(*f, {
                           {"token_embd.weight", {64, kVocab}},
                           {"output_norm.weight", {64}},
                           {"output.weight", {64, kVocab}},
                           {"blk.0.attn_q.weight", {64, 64}},
                           {"blk.0.attn_k.weight", {64, 32}},
                           {"blk.0.attn_v.weight", {64, 32}},
                           {"blk.0.attn_q_norm.weight", {64}},  // n_head * head_dim
                           {"blk.0.attn_k_norm.weight", {32}},  // n_head_kv * head_dim
                           {"blk.0.attn_output.weight", {64, 64}},
                           {"blk.0.post_attention_norm.weight", {64}},
                           {"blk.0.ffn_gate.weight", {64, 96}},
                           {"blk.0.ffn_up.weight", {64, 96}},
                           {"blk.0.ffn_down.weight", {96, 64}},
                           {"blk.0.post_ffw_norm.weight", {64}},
                       });
    EXPECT_FLOAT_EQ(float(*f->get_float("olmo2.attention.layer_norm_rms_epsilon")), 1e-6f);
    EXPECT_FLOAT_EQ(float(*f->get_float("olmo2.rope.freq_base")), 500000.0f);
}

TEST(RandomModel, Phi3HasFusedProjectionsPartialRopeAndLongRope) {
    RandomModelConfig c;
    c.arch = "phi3";
    c.n_layer = 1;
    c.n_ff = 96;
    c.rope_dims = 12;  // of head_dim 16
    auto f = model_file(c);
    expect_tensors(*f, {
                           {"token_embd.weight", {64, kVocab}},
                           {"output_norm.weight", {64}},
                           {"output.weight", {64, kVocab}},
                           {"blk.0.attn_norm.weight", {64}},
                           {"blk.0.attn_qkv.weight", {64, 128}},  // 64 + 2 * 32
                           {"blk.0.attn_output.weight", {64, 64}},
                           {"blk.0.ffn_norm.weight", {64}},
                           {"blk.0.ffn_up.weight", {64, 192}},  // rows [gate; up]
                           {"blk.0.ffn_down.weight", {96, 64}},
                       });
    EXPECT_EQ(f->get_int("phi3.rope.dimension_count"), 12);
    EXPECT_EQ(f->get_int("phi3.attention.sliding_window"), 0);  // as the converter writes Phi-4
    EXPECT_EQ(f->get_string("general.name"), "random-phi");     // no "phi3": see arch_tables.cpp
    EXPECT_FALSE(f->has("phi3.rope.scaling.attn_factor"));

    c.n_ctx = 256;
    c.rope_scaling = random_model::parse_rope_scaling("longrope:32");
    auto lr = model_file(c);
    EXPECT_FALSE(lr->has("phi3.rope.scaling.type"));
    EXPECT_EQ(lr->get_int("phi3.rope.scaling.original_context_length"), 32);
    // The converter's LongRoPE correction: sqrt(1 + ln(256/32) / ln(32)) = sqrt(1.6) = 1.264911.
    EXPECT_NEAR(*lr->get_float("phi3.rope.scaling.attn_factor"), 1.264911, 1e-6);
    EXPECT_FLOAT_EQ(random_model::longrope_attn_factor(256, 256), 1.0f);
    auto lng = gguf::dequantize_tensor(tensor(*lr, "rope_factors_long.weight"));
    auto sht = gguf::dequantize_tensor(tensor(*lr, "rope_factors_short.weight"));
    ASSERT_EQ(lng.size(), 6u);  // rope_dims / 2
    ASSERT_EQ(sht.size(), 6u);
    EXPECT_FLOAT_EQ(lng.front(), 1.0f);
    EXPECT_FLOAT_EQ(lng.back(), 8.0f);  // 256 / 32
    EXPECT_NEAR(lng[1], std::pow(8.0, 0.2), 1e-5);
    EXPECT_FLOAT_EQ(sht.front(), 1.0f);
    EXPECT_FLOAT_EQ(sht.back(), 1.1f);
}

TEST(RandomModel, SmolLM3IsTheLlamaLayoutWithItsOwnKeys) {
    RandomModelConfig c;
    c.arch = "smollm3";
    c.n_layer = 4;
    auto s = model_file(c);
    c.arch = "llama";
    auto l = model_file(c);
    ASSERT_EQ(s->tensors().size(), l->tensors().size());
    // Same seed, same names: the same weights (so llama and smollm3 logits differ only by NoPE).
    for (const auto& t : l->tensors())
        EXPECT_EQ(gguf::dequantize_tensor(tensor(*s, t.name)), gguf::dequantize_tensor(t)) << t.name;
    EXPECT_FLOAT_EQ(float(*s->get_float("smollm3.rope.freq_base")), 5e6f);
    EXPECT_FALSE(s->has("smollm3.attention.sliding_window"));
}

TEST(RandomModel, SoftCapsFollowTheFamily) {
    RandomModelConfig c;
    c.arch = "gemma2";
    c.attn_softcap = 5.0f;
    c.final_softcap = 8.0f;
    auto g2 = model_file(c);
    EXPECT_FLOAT_EQ(float(*g2->get_float("gemma2.attn_logit_softcapping")), 5.0f);
    EXPECT_FLOAT_EQ(float(*g2->get_float("gemma2.final_logit_softcapping")), 8.0f);

    c = {};
    c.arch = "gemma3";
    EXPECT_FALSE(model_file(c)->has("gemma3.final_logit_softcapping"));  // Gemma 3 has none...
    c.final_softcap = 12.0f;                                              // ...but llama.cpp reads one
    EXPECT_FLOAT_EQ(float(*model_file(c)->get_float("gemma3.final_logit_softcapping")), 12.0f);
    EXPECT_FALSE(model_file(c)->has("gemma3.attn_logit_softcapping"));
}

TEST(RandomModel, CommandLineSetsEveryOption) {
    using random_model::parse_command_line;
    using random_model::split_words;
    auto cl = parse_command_line(
        split_words("--arch phi3 --out m.gguf --seed 0x10 --name N --n-embd 96 --n-layer 3 --n-head 6 --n-head-kv 2 "
                    "--n-ff 80 --n-ctx 300 --head-dim 16 --rope-dims 8 --type Q8_0 --vocab-from v.gguf --tied "
                    "--rope-freq-base 20000 --rope-scaling longrope:64"),
        "default.gguf");
    EXPECT_FALSE(cl.help);
    EXPECT_EQ(cl.out, "m.gguf");
    EXPECT_EQ(cl.vocab, "v.gguf");
    const RandomModelConfig& c = cl.config;
    EXPECT_EQ(c.arch, "phi3");
    EXPECT_EQ(c.seed, 16u);
    EXPECT_EQ(c.name, "N");
    EXPECT_EQ(c.n_embd, 96);
    EXPECT_EQ(c.n_layer, 3);
    EXPECT_EQ(c.n_head, 6);
    EXPECT_EQ(c.n_head_kv, 2);
    EXPECT_EQ(c.n_ff, 80);
    EXPECT_EQ(c.n_ctx, 300);
    EXPECT_EQ(c.head_dim, 16);
    EXPECT_EQ(c.rope_dims, 8);
    EXPECT_EQ(c.type, TensorType::Q8_0);
    EXPECT_TRUE(c.tied);
    EXPECT_FLOAT_EQ(c.rope_freq_base, 20000.0f);
    EXPECT_EQ(c.rope_scaling.kind, RopeScalingConfig::Kind::LongRope);
    EXPECT_EQ(c.rope_scaling.original_context, 64);

    cl = parse_command_line(split_words("--arch gemma2 --sliding-window 8 --attn-softcap 5 --final-softcap 7.5"), "d");
    EXPECT_EQ(cl.vocab, "d");
    EXPECT_EQ(cl.config.sliding_window, 8);
    EXPECT_FLOAT_EQ(cl.config.attn_softcap, 5.0f);
    EXPECT_FLOAT_EQ(cl.config.final_softcap, 7.5f);
    EXPECT_TRUE(parse_command_line({"--help"}, "d").help);

    for (const char* bad : {"--n-layer", "--n-layer x", "--seed -1", "--type Q9_9", "--attn-softcap soft", "--colour red"})
        expect_config_error([bad] { parse_command_line(split_words(bad), "d"); }, split_words(bad)[0]);
}

TEST(RandomModel, SpecMappingAcceptsEveryFamily) {
    for (const std::string& arch : random_model::architectures()) {
        RandomModelConfig c;
        c.arch = arch;
        c.n_layer = 4;
        if (arch == "gpt2" || arch == "olmoe") c.n_head_kv = c.n_head;
        if (arch == "deepseek2") c.n_head_kv = 1;
        if (arch == "phi3") c.rope_dims = 12;
        model::ModelSpec s = model::ModelSpec::from_gguf(*model_file(c));
        EXPECT_EQ(s.arch, arch);
        ASSERT_EQ(s.layers.size(), 4u) << arch;
        EXPECT_EQ(s.layers[0].attn.n_head_kv, c.n_head_kv) << arch;
    }
    // Facts llama.cpp applies to these files (see tests/golden/families/README.md).
    RandomModelConfig c;
    c.arch = "gpt2";
    c.n_head_kv = c.n_head;
    model::ModelSpec gpt2 = model::ModelSpec::from_gguf(*model_file(c));
    EXPECT_EQ(gpt2.norm, model::NormKind::LayerNorm);
    EXPECT_TRUE(gpt2.learned_positions);
    EXPECT_FALSE(gpt2.layers[0].attn.rope.enabled);
    c = {};
    c.arch = "phi3";
    c.rope_dims = 12;
    model::ModelSpec phi3 = model::ModelSpec::from_gguf(*model_file(c));
    EXPECT_EQ(phi3.layers[0].attn.rope.n_dims, 12);
    EXPECT_TRUE(phi3.layers[0].attn.rope.neox);
    EXPECT_EQ(phi3.layers[0].attn.window, 0);
    c = {};
    c.arch = "smollm3";
    c.n_layer = 8;
    model::ModelSpec smol = model::ModelSpec::from_gguf(*model_file(c));
    for (int l = 0; l < 8; ++l) EXPECT_EQ(smol.layers[size_t(l)].attn.rope.enabled, (l + 1) % 4 != 0) << l;
    c = {};
    c.arch = "gemma2";
    c.sliding_window = 8;
    model::ModelSpec g2 = model::ModelSpec::from_gguf(*model_file(c));
    EXPECT_EQ(g2.layers[0].attn.window, 8);
    EXPECT_EQ(g2.layers[1].attn.window, 0);
    EXPECT_FLOAT_EQ(g2.layers[0].attn.softcap, 50.0f);
    EXPECT_FLOAT_EQ(g2.final_softcap, 30.0f);
}

TEST(RandomModel, InvalidConfigurationsNameTheProblem) {
    auto vocab = tiny_vocab();
    auto build = [&](RandomModelConfig c) { return [c, &vocab] { random_model::build_random_model(c, *vocab); }; };
    RandomModelConfig c;
    c.arch = "gpt5";
    expect_config_error(build(c), "--arch 'gpt5' is not known");
    c = {};
    c.n_head_kv = 3;
    expect_config_error(build(c), "not a multiple of --n-head-kv");
    c = {};
    c.n_embd = 66;
    expect_config_error(build(c), "give --head-dim");
    c = {};
    c.head_dim = 15;
    expect_config_error(build(c), "must be even");
    c = {};
    c.n_layer = 0;
    expect_config_error(build(c), "--n-layer");
    c = {};
    c.arch = "qwen2";
    c.head_dim = 32;
    expect_config_error(build(c), "head_dim * n_head == n_embd");
    c = {};
    c.arch = "qwen2";
    c.rope_scaling = random_model::parse_rope_scaling("llama3:8:1:4:64");
    expect_config_error(build(c), "not read by qwen2");
    c = {};
    c.sliding_window = 8;
    expect_config_error(build(c), "no sliding-window attention");
    c = {};
    c.type = TensorType::Q8_1;
    expect_config_error(build(c), "--type Q8_1");
    c = {};
    c.arch = "gpt2";
    expect_config_error(build(c), "multi-head attention only");
    c.n_head_kv = c.n_head;
    c.rope_dims = 8;
    expect_config_error(build(c), "gpt2 has no RoPE");
    c.rope_dims = 0;
    c.rope_scaling = random_model::parse_rope_scaling("linear:2");
    expect_config_error(build(c), "gpt2 has no RoPE");
    c = {};
    c.arch = "olmo2";
    c.tied = true;
    expect_config_error(build(c), "olmo2 always has an output.weight");
    c = {};
    c.rope_dims = 8;
    expect_config_error(build(c), "llama rotates whole heads");
    c = {};
    c.arch = "phi3";
    c.rope_dims = 7;
    expect_config_error(build(c), "--rope-dims 7 must be even");
    c.rope_dims = 18;
    expect_config_error(build(c), "--rope-dims");
    c = {};
    c.rope_scaling = random_model::parse_rope_scaling("longrope:64");
    expect_config_error(build(c), "only written for phi3");
    c = {};
    c.attn_softcap = 5;
    expect_config_error(build(c), "no attention-logit soft-capping");
    c = {};
    c.arch = "gemma3";
    c.attn_softcap = 5;
    expect_config_error(build(c), "no attention-logit soft-capping");
    c = {};
    c.arch = "qwen3";
    c.final_softcap = 5;
    expect_config_error(build(c), "no final-logit soft-capping");
    c = {};
    c.arch = "phi3";
    c.sliding_window = 8;
    expect_config_error(build(c), "no sliding-window attention");

    gguf::Writer no_tokens;
    no_tokens.set("general.architecture", gguf::Value::from_string("llama"));
    auto bytes = no_tokens.to_bytes();
    auto empty = gguf::File::from_memory(bytes.data(), bytes.size(), "empty.gguf");
    expect_config_error([&] { random_model::build_random_model(RandomModelConfig{}, *empty); },
                        "empty.gguf: no tokenizer.ggml.tokens");

    for (const char* bad : {"cubic:2", "linear", "linear:x", "yarn:4", "yarn:4:1.5", "llama3:8:1:4", "longrope", ""})
        expect_config_error([bad] { random_model::parse_rope_scaling(bad); }, "--rope-scaling");
    EXPECT_EQ(random_model::parse_rope_scaling("none").kind, RopeScalingConfig::Kind::None);
}

TEST(RandomModel, WritesAFileWithTheSharedVocabulary) {
    VKLLM_REQUIRE_SHARED(shared);
    const std::string vocab = shared + "/models/stories260K/stories260K-F32.gguf";
    const std::string out = (std::filesystem::temp_directory_path() /
                             ("vkllm-random-model-" + std::to_string(::getpid()) + ".gguf")).string();
    RandomModelConfig c;
    c.seed = 5;
    c.type = TensorType::Q4_0;
    random_model::write_random_model(c, vocab, out);
    auto f = gguf::File::open(out);
    auto v = gguf::File::open(vocab);
    EXPECT_EQ(f->get_int("llama.vocab_size"), 512);
    EXPECT_EQ(tensor(*f, "token_embd.weight").dims, (std::vector<uint64_t>{64, 512}));
    EXPECT_EQ(f->get_strings("tokenizer.ggml.tokens"), v->get_strings("tokenizer.ggml.tokens"));
    // The streamed file equals the in-memory image.
    EXPECT_EQ(test::read_file(out), random_model::build_random_model(c, *v).to_bytes());
    f.reset();
    std::filesystem::remove(out);
}

// The committed golden models (tests/golden/families and tests/golden/moe, made by
// scripts/make-golden-families.sh and make-golden-moe.sh from models.txt) are what the generator
// writes today: if this fails, the generator changed and the golden logits no longer describe the
// files it makes; rerun the script.
TEST(RandomModel, GoldenFamilyModelsAreReproducible) {
    VKLLM_REQUIRE_SHARED(shared);
    auto vocab = gguf::File::open(shared + "/models/stories260K/stories260K-F32.gguf");
    for (const auto& [subdir, expected_models] : {std::pair{"families", 12}, std::pair{"moe", 7}}) {
        SCOPED_TRACE(subdir);
        const std::string dir = test::source_dir() + "/tests/golden/" + subdir;
        std::ifstream table(dir + "/models.txt");
        ASSERT_TRUE(table) << dir << "/models.txt";
        int models = 0;
        for (std::string line; std::getline(table, line);) {
            auto words = random_model::split_words(line);
            if (words.empty() || words[0][0] == '#') continue;
            const std::string name = words[0];
            words.erase(words.begin());
            const auto cl = random_model::parse_command_line(words, "");
            SCOPED_TRACE(name);
            EXPECT_EQ(random_model::build_random_model(cl.config, *vocab).to_bytes(), test::read_file(dir + "/" + name + ".gguf"));
            // One logits row of the vocabulary's size per prompt token.
            const auto token_bytes = test::read_file(dir + "/" + name + ".tokens.txt");
            const auto tokens = random_model::split_words(std::string(token_bytes.begin(), token_bytes.end()));
            EXPECT_GE(tokens.size(), 40u);
            EXPECT_EQ(test::read_file(dir + "/" + name + ".logits.f32").size(), tokens.size() * 512 * sizeof(float));
            ++models;
        }
        EXPECT_EQ(models, expected_models);
    }
}

// Mixture of experts with llama.cpp's names and shapes (ggml order): router ffn_gate_inp
// [n_embd, n_expert], experts gate/up [n_embd, n_ff_exp, n_expert], down [n_ff_exp, n_embd, n_expert].
TEST(RandomModel, MoeFamiliesHaveRouterExpertsAndKeys) {
    RandomModelConfig c;
    c.arch = "llama";  // Mixtral: arch llama with experts of width n_ff, no dense FFN
    c.n_layer = 1;
    c.n_ff = 32;
    c.n_expert = 8;
    c.tied = true;
    auto mixtral = model_file(c);
    EXPECT_EQ(mixtral->get_int("llama.expert_count"), 8);
    EXPECT_EQ(mixtral->get_int("llama.expert_used_count"), 2);  // the llama default
    EXPECT_EQ(mixtral->find_tensor("blk.0.ffn_gate.weight"), nullptr);
    EXPECT_EQ(tensor(*mixtral, "blk.0.ffn_gate_inp.weight").dims, (std::vector<uint64_t>{64, 8}));
    EXPECT_EQ(tensor(*mixtral, "blk.0.ffn_gate_exps.weight").dims, (std::vector<uint64_t>{64, 32, 8}));
    EXPECT_EQ(tensor(*mixtral, "blk.0.ffn_up_exps.weight").dims, (std::vector<uint64_t>{64, 32, 8}));
    EXPECT_EQ(tensor(*mixtral, "blk.0.ffn_down_exps.weight").dims, (std::vector<uint64_t>{32, 64, 8}));
    EXPECT_EQ(mixtral->find("llama.expert_feed_forward_length"), nullptr);

    c = {};
    c.arch = "qwen3moe";  // experts sized by expert_feed_forward_length, not feed_forward_length
    c.n_layer = 1;
    c.n_ff = 96;
    c.n_ff_exp = 16;
    c.n_expert_used = 8;
    auto qwen3moe = model_file(c);
    EXPECT_EQ(qwen3moe->get_int("qwen3moe.expert_count"), 16);
    EXPECT_EQ(qwen3moe->get_int("qwen3moe.expert_used_count"), 8);
    EXPECT_EQ(qwen3moe->get_int("qwen3moe.expert_feed_forward_length"), 16);
    EXPECT_EQ(tensor(*qwen3moe, "blk.0.ffn_down_exps.weight").dims, (std::vector<uint64_t>{16, 64, 16}));
    EXPECT_EQ(tensor(*qwen3moe, "blk.0.attn_q_norm.weight").dims, (std::vector<uint64_t>{16}));

    c = {};
    c.arch = "olmoe";  // q/k norms over the whole projections; MHA only; output.weight required
    c.n_layer = 1;
    c.n_head_kv = c.n_head;
    c.n_ff = 32;
    auto olmoe = model_file(c);
    EXPECT_EQ(olmoe->get_int("olmoe.expert_count"), 16);
    EXPECT_EQ(olmoe->get_int("olmoe.expert_used_count"), 4);
    EXPECT_EQ(tensor(*olmoe, "blk.0.attn_k_norm.weight").dims, (std::vector<uint64_t>{64}));
    EXPECT_EQ(tensor(*olmoe, "blk.0.ffn_up_exps.weight").dims, (std::vector<uint64_t>{64, 32, 16}));
    EXPECT_NE(olmoe->find_tensor("output.weight"), nullptr);

    c.n_head_kv = 2;
    expect_config_error([&] { model_file(c); }, "multi-head attention only");
    c = {};
    c.arch = "olmoe";
    c.n_head_kv = c.n_head;
    c.n_ff_exp = 8;
    expect_config_error([&] { model_file(c); }, "use --n-ff");
    c.n_ff_exp = 0;
    c.n_expert_used = 17;
    expect_config_error([&] { model_file(c); }, "--n-expert-used 17");
    c = {};
    c.arch = "qwen2";
    c.n_expert = 4;
    expect_config_error([&] { model_file(c); }, "no mixture of experts");
    c = {};
    c.n_expert_used = 2;  // llama without --n-expert is dense
    expect_config_error([&] { model_file(c); }, "need --n-expert");
    EXPECT_EQ(random_model::parse_command_line(random_model::split_words("--n-expert 8 --n-expert-used 3 --n-ff-exp 5"), "d").config.n_expert_used, 3);
}
