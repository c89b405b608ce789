// Random-weight model writer (tools/random_model): determinism, the metadata and tensors it
// writes for llama (read back with gguf::File), weight statistics, quantization fallbacks, and
// that ModelSpec::from_gguf accepts its llama output, and names the key at fault when the
// attention-head metadata cannot be right. Loading in llama.cpp is checked by
// tools/random_model/check_oracle.sh (it needs the oracle installed).
#include "random_model_fixture.h"

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

// ---- The loader's messages for attention-head metadata that cannot be right: each names the
// key that is wrong (both keys only where the pair alone is inconsistent). ----

namespace {

// ModelSpec::from_gguf's message for a random llama (n_embd 64, 8 heads, 4 KV heads, no
// attention.key_length) with `key` set to `value`; empty when it loads.
std::string spec_error(const std::string& key, uint32_t value) {
    RandomModelConfig c;
    c.n_embd = 64;
    c.n_head = 8;
    c.n_head_kv = 4;
    gguf::Writer w = random_model::build_random_model(c, *tiny_vocab());
    w.set(key, gguf::Value::from_u32(value));
    const std::vector<uint8_t> bytes = w.to_bytes();
    auto f = gguf::File::from_memory(bytes.data(), bytes.size(), "heads.gguf");
    EXPECT_FALSE(f->has("llama.attention.key_length"));
    try {
        model::ModelSpec::from_gguf(*f);
    } catch (const model::ModelError& e) {
        return e.what();
    }
    return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(SpecErrors, TheUnmodifiedModelLoads) { EXPECT_EQ(spec_error("llama.attention.head_count", 8), ""); }

// head_count 3 with head_count_kv 4 was once reported as "attention.head_count_kv = 4 is out of
// range": the key at fault is head_count, whose 3 heads cannot split the 64 channels.
TEST(SpecErrors, AHeadCountThatCannotSplitTheEmbeddingNamesHeadCount) {
    const std::string e = spec_error("llama.attention.head_count", 3);
    EXPECT_TRUE(has(e, "heads.gguf: attention.head_count = 3 does not divide embedding_length = 64")) << e;
    EXPECT_FALSE(has(e, "head_count_kv")) << e;
}

TEST(SpecErrors, AnInconsistentPairNamesBothKeys) {
    // 2 query heads of 32 channels, 4 KV heads: either key could be the wrong one.
    const std::string e = spec_error("llama.attention.head_count", 2);
    EXPECT_TRUE(has(e, "attention.head_count = 2 is not a multiple of attention.head_count_kv = 4")) << e;
    EXPECT_FALSE(has(e, "out of range")) << e;
    const std::string kv = spec_error("llama.attention.head_count_kv", 3);
    EXPECT_TRUE(has(kv, "attention.head_count = 8 is not a multiple of attention.head_count_kv = 3")) << kv;
}

TEST(SpecErrors, AnImpossibleKeyValueCountNamesHeadCountKv) {
    const std::string e = spec_error("llama.attention.head_count_kv", 0);
    EXPECT_TRUE(has(e, "attention.head_count_kv = 0 is out of range")) << e;
    const std::string zero = spec_error("llama.attention.head_count", 0);
    EXPECT_TRUE(has(zero, "attention.head_count = 0 is out of range")) << zero;
    EXPECT_FALSE(has(zero, "head_count_kv")) << zero;
}

}  // namespace
