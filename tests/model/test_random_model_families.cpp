// Random-weight model writer (tools/random_model), the other families: their tensors and keys,
// the command line, configuration errors, and that the committed golden models are what the
// writer makes today.
#include "random_golden_models.h"
#include "random_model_fixture.h"

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
        if (arch == "gpt2" || arch == "olmoe" || arch == "bert") c.n_head_kv = c.n_head;  // MHA only
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
    EXPECT_EQ(f->get_string("general.name"), "random-phi");     // no "phi3": see arch_tables_llama.cpp
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

// EXAONE: llama's tensors and keys (the same weights for the same seed), Llama 3 rope_freqs
// allowed; the spec differs from llama's only by NeoX RoPE pairs.
TEST(RandomModel, ExaoneIsTheLlamaLayoutWithNeoxRope) {
    RandomModelConfig c;
    c.arch = "exaone";
    c.rope_scaling = random_model::parse_rope_scaling("llama3:8:1:4:64");
    auto e = model_file(c);
    c.arch = "llama";
    c.rope_freq_base = 1e6f;  // exaone's default base (the Llama 3 factors depend on it)
    auto l = model_file(c);
    ASSERT_EQ(e->tensors().size(), l->tensors().size());
    for (const auto& t : l->tensors())
        EXPECT_EQ(gguf::dequantize_tensor(tensor(*e, t.name)), gguf::dequantize_tensor(t)) << t.name;
    EXPECT_NE(e->find_tensor("rope_freqs.weight"), nullptr);
    EXPECT_FLOAT_EQ(float(*e->get_float("exaone.rope.freq_base")), 1e6f);

    const model::ModelSpec es = model::ModelSpec::from_gguf(*e), ls = model::ModelSpec::from_gguf(*l);
    ASSERT_EQ(es.layers.size(), ls.layers.size());
    for (size_t i = 0; i < es.layers.size(); ++i) {
        EXPECT_TRUE(es.layers[i].attn.rope.neox);
        EXPECT_FALSE(ls.layers[i].attn.rope.neox);
        EXPECT_EQ(es.layers[i].attn.rope.scaling, model::RopeScaling::Llama3);
        EXPECT_EQ(es.layers[i].attn.qk_norm, model::QkNorm::None);
        EXPECT_FALSE(es.layers[i].attn.bias_qkv);
        EXPECT_EQ(es.layers[i].ffn.moe.n_expert, 0);
    }
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
        if (arch == "gpt2" || arch == "olmoe" || arch == "bert") c.n_head_kv = c.n_head;
        if (arch == "deepseek2") c.n_head_kv = 1;
        if (arch == "phi3") c.rope_dims = 12;
        model::ModelSpec s = model::ModelSpec::from_gguf(*model_file(c));
        EXPECT_EQ(s.arch, arch);
        ASSERT_EQ(s.layers.size(), 4u) << arch;
        if (s.layers[0].ssm_beside_attention) {  // falcon-h1: attention and Mamba-2 in every layer
            EXPECT_EQ(s.layers[0].ssm.d_inner, 2 * c.n_embd) << arch;
            EXPECT_EQ(s.layers[0].attn.n_head_kv, c.n_head_kv) << arch;
            continue;
        }
        if (s.layers[0].ssm.enabled() || s.layers[0].shortconv.enabled()) {  // a recurrent mixer first
            if (s.layers[0].ssm.enabled()) { EXPECT_EQ(s.layers[0].ssm.d_inner, 2 * c.n_embd) << arch; }
            EXPECT_EQ(s.layers[0].attn.n_head_kv, 0) << arch;
            continue;
        }
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

// The committed golden models (tests/golden/families, moe and parallel_alibi, made by
// scripts/make-golden-*.sh from each directory's models.txt) are what the generator
// writes today: if this fails, the generator changed and the golden logits no longer describe the
// files it makes; rerun the script.
TEST(RandomModel, GoldenFamilyModelsAreReproducible) {
    VKLLM_REQUIRE_SHARED(shared);
    auto vocab = gguf::File::open(shared + "/models/stories260K/stories260K-F32.gguf");
    for (const auto& [subdir, expected_models] : {std::pair{"families", 13u}, std::pair{"moe", 7u}, std::pair{"parallel_alibi", 3u}}) {
        SCOPED_TRACE(subdir);
        const std::string dir = test::source_dir() + "/tests/golden/" + subdir;
        test::expect_random_golden_models_reproducible(dir, *vocab, expected_models);
        // One logits row of the vocabulary's size per prompt token.
        for (const test::RandomGoldenModel& m : test::random_golden_models(dir)) {
            const auto token_bytes = test::read_file(dir + "/" + m.name + ".tokens.txt");
            const auto tokens = random_model::split_words(std::string(token_bytes.begin(), token_bytes.end()));
            EXPECT_GE(tokens.size(), 40u) << m.name;
            EXPECT_EQ(test::read_file(dir + "/" + m.name + ".logits.f32").size(), tokens.size() * 512 * sizeof(float)) << m.name;
        }
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
