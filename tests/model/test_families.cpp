// Every family (dense and mixture-of-experts), declared as data and run by the one forward,
// against llama.cpp on random-weight models written by tools/random_model (tests/golden/families,
// moe and parallel_alibi, made by scripts/make-golden-*.sh): the logits of every prompt position
// within 1e-3 (max abs) of llama.cpp's exact mode and 32 greedy tokens equal. Prompts are longer than every sliding
// window, and a second pass with a small batch makes the ring-buffer caches wrap.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "gguf/gguf.h"
#include "gpu/device.h"
#include "golden_cache.h"
#include "greedy.h"
#include "model/spec.h"
#include "test_support.h"
#include "model/model_internal.h"
#include "reference/reference_forward.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

// "families/gemma2", "moe/mixtral", ...: the dense families and the mixture-of-experts ones.
std::vector<std::string> golden_models() {
    std::vector<std::string> names;
    for (const char* sub : {"families", "moe", "parallel_alibi"}) {
        std::error_code ec;
        for (const auto& e : std::filesystem::directory_iterator(test::source_dir() + "/tests/golden/" + sub, ec))
            if (e.path().extension() == ".gguf") names.push_back(std::string(sub) + "/" + e.path().stem().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}

bool probe_experts(const Model& m) { return m.internals().spec().layers[0].ffn.moe.n_expert > 0; }

// Any block-quantised tensor: its matmuls read activations rounded to 8 bits.
bool quantised(const Model& m) {
    for (const auto& t : m.internals().file().tensors())
        if (t.type != gguf::TensorType::F32 && t.type != gguf::TensorType::F16 && t.type != gguf::TensorType::BF16)
            return true;
    return false;
}

// The first token whose chosen experts (as a set) differ between two runs in any MoE layer.
size_t first_routing_difference(const std::vector<RoutingProbe>& a, const std::vector<RoutingProbe>& b) {
    size_t first = SIZE_MAX;
    for (size_t l = 0; l < std::min(a.size(), b.size()); ++l) {
        const size_t k = size_t(a[l].top_k), n = std::min(a[l].experts.size(), b[l].experts.size()) / std::max<size_t>(k, 1);
        for (size_t t = 0; t < n && t < first; ++t) {
            std::vector<int32_t> x(a[l].experts.begin() + long(t * k), a[l].experts.begin() + long((t + 1) * k));
            std::vector<int32_t> y(b[l].experts.begin() + long(t * k), b[l].experts.begin() + long((t + 1) * k));
            std::sort(x.begin(), x.end());
            std::sort(y.begin(), y.end());
            if (x != y) first = t;
        }
    }
    return first;
}

class Family : public ::testing::TestWithParam<std::string> {};

TEST_P(Family, LogitsAndGreedyTextMatchLlamaCpp) {
    const std::string base = test::source_dir() + "/tests/golden/" + GetParam();
    const uint64_t errors_before = gpu::validation_error_count();
    auto model = Model::load(base + ".gguf");
    const int n_vocab = model->internals().spec().n_vocab;
    std::vector<int32_t> tokens = test::read_ids(base + ".tokens.txt");
    std::vector<float> ref = test::read_f32(base + ".logits.f32");
    ASSERT_FALSE(tokens.empty());
    ASSERT_EQ(ref.size(), tokens.size() * size_t(n_vocab));
    for (const auto& L : model->internals().spec().layers)
        if (L.attn.window > 0) {
            EXPECT_LT(L.attn.window, int(tokens.size())) << "the prompt must cross the sliding window";
        }

    // The goldens' own cache (F32) at two batch sizes, to 1e-3 with the greedy text; then the
    // default cache (F16 where the device has 16-bit storage) to golden_cache.h's bound, up to the
    // first token a MoE router sends to other experts than in the F32 run.
    std::vector<RoutingProbe> f32_routing;
    // Activations rounded to 8 bits on a GPU: see golden_cache.h (kGpuRoundingFlips).
    const bool flips = quantised(*model) && model->internals().context().caps().type != "cpu";
    for (auto [cache, n_batch] : {std::pair{KvCacheType::F32, 256}, {KvCacheType::F32, 4}, {KvCacheType::Auto, 256}}) {
        SCOPED_TRACE("batch " + std::to_string(n_batch) + ", cache " + kv_cache_type_name(cache));
        SessionOptions so;
        so.n_batch = n_batch;
        so.kv_cache = cache;
        so.probes.expert_load = probe_experts(*model);
        so.probes.routing = probe_experts(*model) && n_batch == 256;
        Session session(*model, so);
        const bool exact_cache = session.kv_cache_usage().type == KvCacheType::F32;
        const double bound = exact_cache && !flips ? 1e-3
                             : quantised(*model)   ? test::kF16CacheQuantisedBound
                                                   : test::kF16CacheBound;
        std::vector<float> logits = session.eval(tokens, /*all_logits=*/true);
        ASSERT_EQ(logits.size(), ref.size());
        size_t compared = tokens.size();
        if (so.probes.routing && cache == KvCacheType::F32) f32_routing = session.probes().routing;
        if (so.probes.routing && !exact_cache) compared = std::min(compared, first_routing_difference(f32_routing, session.probes().routing));
        EXPECT_GE(compared, tokens.size() / 4) << "the routing differs from the F32 run's too early";
        for (size_t p = 0; p < compared; ++p) {
            std::vector<float> a(logits.begin() + long(p * n_vocab), logits.begin() + long((p + 1) * n_vocab));
            std::vector<float> b(ref.begin() + long(p * n_vocab), ref.begin() + long((p + 1) * n_vocab));
            EXPECT_LE(test::max_abs_diff(a, b), bound) << "position " << p;
        }
        if (probe_experts(*model)) {
            // Every token's top_k choices are counted once per MoE layer.
            for (const ExpertLoad& e : session.probes().expert_load_prefill) {
                double sum = 0;
                for (float t : e.tokens) sum += t;
                EXPECT_EQ(sum, double(tokens.size()) * model->internals().spec().layers[size_t(e.layer)].ffn.moe.top_k);
            }
        }
        if (n_batch != 256 || cache != KvCacheType::F32 || flips) continue;
        std::vector<int32_t> expected = test::read_ids(base + ".greedy.txt");
        ASSERT_EQ(expected.size(), 32u);
        EXPECT_EQ(test::greedy_continuation(session, std::vector<float>(logits.end() - n_vocab, logits.end()),
                                            expected.size()),
                  expected);
    }
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

INSTANTIATE_TEST_SUITE_P(Golden, Family, ::testing::ValuesIn(golden_models()),
                         [](const auto& info) {
                             std::string n = info.param;
                             std::replace_if(n.begin(), n.end(), [](char c) { return !std::isalnum(c); }, '_');
                             return n;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Family);

// The parallel block (Falcon, both variants) and ALiBi (Jais) in the CPU reference forward: every
// prompt position against llama.cpp, the prompt at once and then token by token.
TEST(Families, ReferenceMatchesLlamaCppOnTheParallelAndAlibiFamilies) {
    for (const char* name : {"falcon", "falcon-40b", "jais"}) {
        SCOPED_TRACE(name);
        const std::string base = test::source_dir() + "/tests/golden/parallel_alibi/" + name;
        auto file = gguf::File::open(base + ".gguf");
        const model::ModelSpec spec = model::ModelSpec::from_gguf(*file);
        const std::vector<int32_t> tokens = test::read_ids(base + ".tokens.txt");
        const std::vector<float> ref = test::read_f32(base + ".logits.f32");
        model::ReferenceForward whole(*file, spec, 64);
        const double d = test::max_abs_diff(whole.eval(tokens), ref);
        std::cout << name << ": CPU reference max |logit - llama.cpp| " << d << "\n";
        EXPECT_LE(d, 1e-3);
        model::ReferenceForward steps(*file, spec, 64);
        const size_t n_vocab = size_t(spec.n_vocab), last = tokens.size() - 1;
        std::vector<float> logits;
        for (int32_t t : tokens) logits = steps.eval({t});
        EXPECT_LE(test::max_abs_diff(logits, std::vector<float>(ref.begin() + long(last * n_vocab), ref.end())), 1e-3);
    }
    // What each file maps to: Falcon's one or two norms, Jais's ALiBi and scale.
    auto spec_of = [](const char* name) {
        return model::ModelSpec::from_gguf(
            *gguf::File::open(test::source_dir() + "/tests/golden/parallel_alibi/" + name + ".gguf"));
    };
    const model::ModelSpec falcon = spec_of("falcon"), falcon40 = spec_of("falcon-40b"), jais = spec_of("jais");
    EXPECT_TRUE(falcon.layers[0].parallel && falcon40.layers[0].parallel && !jais.layers[0].parallel);
    EXPECT_EQ(falcon.layers[0].attn_norm_tensor, "attn_norm");
    EXPECT_EQ(falcon40.layers[0].attn_norm_tensor, "attn_norm_2");
    EXPECT_EQ(falcon40.layers[0].ffn_norm_tensor, "attn_norm");
    EXPECT_EQ(falcon.layers[0].attn.n_head_kv, 1);
    EXPECT_EQ(jais.layers[0].attn.max_alibi_bias, 8.0f);
    EXPECT_EQ(jais.layers[0].attn.n_head, 6);  // not a power of two: the second half of the slopes
    EXPECT_FLOAT_EQ(jais.layers[0].attn.scale, 1.0f / 16.0f);
    EXPECT_FALSE(jais.layers[0].attn.rope.enabled);
}

TEST(Families, EveryFamilyHasGoldenData) {
    std::vector<std::string> archs;
    for (const auto& n : golden_models())
        archs.push_back(gguf::File::open(test::source_dir() + "/tests/golden/" + n + ".gguf")
                            ->get_string("general.architecture")
                            .value_or(""));
    for (const char* arch : {"gpt2", "llama", "qwen2", "qwen3", "gemma2", "gemma3", "olmo2", "phi3", "smollm3",
                             "qwen3moe", "olmoe", "gpt-oss", "llama4", "deepseek2", "exaone", "falcon", "jais"})
        EXPECT_NE(std::count(archs.begin(), archs.end(), arch), 0) << "no golden model of architecture " << arch;
}

TEST(Families, UnsupportedArchitectureIsAClearError) {
    auto supported = model::supported_architectures();
    EXPECT_EQ(std::count(supported.begin(), supported.end(), "rwkv6"), 0);
    // A file of an unknown architecture (RWKV-6: llama.cpp runs it, vkllm only RWKV-7), written
    // with the project's writer.
    gguf::Writer w;
    w.set("general.architecture", gguf::Value::from_string("rwkv6"));
    std::string path = test::temp_path("rwkv6.gguf");
    w.write(path);
    try {
        Model::load(path);
        FAIL() << "expected an error";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("architecture 'rwkv6' is not supported"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace vkllm
