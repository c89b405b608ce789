// Dispatches and barriers per decode step of a quantised model (stories260K Q4_0: Q, K, V, gate
// and up in Q4_0, ffn_down F16), pinned per layer as test_dispatch_counts pins the zoo's F32
// models: with llama.cpp's rounding, decode quantizes each input of a group of matvecs once
// (ops::quantize_activations: one dispatch and one barrier per input group, Q/K/V and gate/up),
// where each matvec used to round x in every workgroup (VKLLM_MATVEC_XQ=0, the last two cases).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "gpu/stream.h"
#include "model/forward.h"
#include "model/model_internal.h"
#include "test_support.h"
#include "vkllm/gguf.h"
#include "vkllm/model.h"

namespace vkllm {
namespace {

using Counts = gpu::Stream::Counts;

struct QuantCountCase {
    const char* name;
    bool quantize_x;      // VKLLM_MATVEC_XQ
    bool norm_in_matvec;  // VKLLM_NORM_IN_MATVEC
    bool quantize_single; // VKLLM_MATVEC_XQ_SINGLE
    Counts layer;         // every layer
    Counts outside;       // embeddings and output head
};

void PrintTo(const QuantCountCase& c, std::ostream* os) { *os << c.name; }

class QuantizedDispatchCounts : public ::testing::TestWithParam<QuantCountCase> {};

TEST_P(QuantizedDispatchCounts, DecodeStepIsPinned) {
    VKLLM_REQUIRE_SHARED(shared);
    const QuantCountCase& c = GetParam();
    const uint64_t errors_before = gpu::validation_error_count();
    test::ScopedEnv xq("VKLLM_MATVEC_XQ", c.quantize_x ? "1" : "0");  // read by the Forward's constructor
    test::ScopedEnv norm("VKLLM_NORM_IN_MATVEC", c.norm_in_matvec ? "1" : "0");
    test::ScopedEnv single("VKLLM_MATVEC_XQ_SINGLE", c.quantize_single ? "1" : "0");
    auto model = Model::load(shared + "/models/stories260K/stories260K-Q4_0.gguf");
    const auto& in = model->internals();
    model::Forward fwd(in.context(), in.spec(), in.weights(), /*n_ctx=*/32, /*n_batch=*/4);
    std::vector<float> logits(size_t(4) * size_t(in.spec().n_vocab));
    const std::vector<int32_t> prompt{1, 5, 9};
    ProbeConfig off;
    fwd.step(prompt.data(), int(prompt.size()), 0, false, logits.data(), off, nullptr);
    const int32_t next = 21;
    fwd.step(&next, 1, int(prompt.size()), false, logits.data(), off, nullptr);
    const std::vector<Counts>& got = fwd.step_counts();
    ASSERT_EQ(got.size(), size_t(in.spec().n_layer) + 1);
    EXPECT_EQ(got[0].dispatches, c.outside.dispatches) << "outside the layers";
    EXPECT_EQ(got[0].barriers, c.outside.barriers) << "outside the layers";
    for (size_t l = 1; l < got.size(); ++l) {
        EXPECT_EQ(got[l].dispatches, c.layer.dispatches) << "layer " << l - 1;
        EXPECT_EQ(got[l].barriers, c.layer.barriers) << "layer " << l - 1;
    }
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

// Per layer (dispatches / barriers), measured on lavapipe, native and mobile alike. Quantizing
// once takes a dispatch and a barrier per input group (Q/K/V, gate/up), and the group's RMSNorm
// goes into that dispatch on every device: the counts of the norm's own dispatch (the CPU
// drivers' default) stay as they were, and where the norm was inside the matvecs (GPUs' default)
// each layer has two dispatches and two barriers more, for matvecs that no longer re-round x in
// every workgroup. Outside the layers (the final norm and the output head) nothing changed.
// A GPU's policy also quantizes the attention output's input (Q4_0 here; ffn_down is F16), which
// its matvec would otherwise round in every workgroup: one dispatch and one barrier more a layer.
// Q, K and V as one stacked matvec (ops::matvec_stacked), whichever way x reaches them: two
// dispatches fewer a layer in every case, the barriers as they were.
INSTANTIATE_TEST_SUITE_P(Stories260KQ4_0, QuantizedDispatchCounts,
                         ::testing::Values(QuantCountCase{"quantized_x", true, false, false, {8, 8, 0}, {4, 3, 0}},
                                           QuantCountCase{"quantized_x_norm_policy", true, true, false, {8, 8, 0}, {3, 2, 0}},
                                           QuantCountCase{"gpu_policy", true, true, true, {9, 9, 0}, {3, 2, 0}},
                                           QuantCountCase{"rounded_in_matvec", false, false, false, {8, 8, 0}, {4, 3, 0}},
                                           QuantCountCase{"rounded_in_matvec_norm_in_matvec", false, true, false, {6, 6, 0}, {3, 2, 0}}),
                         [](const auto& info) { return std::string(info.param.name); });

// llama.cpp's Q4_K_M mix of zoo-wide (2 layers, every matrix 256-multiples wide) puts layer 1's
// attn_v in Q6_K beside Q4_K q and k, layer 0's all in Q4_K: layer 0 stacks Q, K and V into one
// matvec, layer 1 Q and K (V alone). Decode with the stacks gives the logits the three matvecs give,
// bit for bit (each row is summed as its own matvec sums it), with two and one dispatches fewer.
TEST(StackedProjections, EqualSeparateMatvecsWhereVHasAnotherType) {
    const std::string path = test::temp_path("zoo-wide-q4_k_m.gguf");
    const QuantizeReport report =
        quantize_mix(test::source_dir() + "/assets/zoo/zoo-wide.gguf", path, "Q4_K_M");
    auto type_of = [&](const std::string& name) {
        for (const QuantizedTensor& t : report.tensors)
            if (t.name == name) return t.to;
        return std::string("?");
    };
    ASSERT_EQ(type_of("blk.0.attn_v.weight"), "Q4_K");
    ASSERT_EQ(type_of("blk.1.attn_v.weight"), "Q6_K");
    ASSERT_EQ(type_of("blk.1.attn_k.weight"), "Q4_K");
    const uint64_t errors_before = gpu::validation_error_count();
    std::vector<float> logits[2];
    std::vector<Counts> counts[2];
    for (int stack : {0, 1}) {
        test::ScopedEnv env("VKLLM_STACK_QKV", stack ? "1" : "0");  // read by the Forward's constructor
        auto model = Model::load(path);
        const auto& in = model->internals();
        model::Forward fwd(in.context(), in.spec(), in.weights(), /*n_ctx=*/32, /*n_batch=*/4);
        std::vector<float> out(size_t(4) * size_t(in.spec().n_vocab));
        const std::vector<int32_t> prompt{1, 50, 90};
        ProbeConfig off;
        fwd.step(prompt.data(), int(prompt.size()), 0, false, out.data(), off, nullptr);
        for (int32_t t : {21, 7}) {
            fwd.step(&t, 1, int(prompt.size()) + (t == 7), false, out.data(), off, nullptr);
            logits[stack].insert(logits[stack].end(), out.begin(), out.begin() + in.spec().n_vocab);
        }
        counts[stack] = fwd.step_counts();
    }
    ASSERT_EQ(logits[0].size(), logits[1].size());
    for (size_t i = 0; i < logits[0].size(); ++i) ASSERT_EQ(logits[1][i], logits[0][i]) << "logit " << i;
    ASSERT_EQ(counts[0].size(), 3u);
    ASSERT_EQ(counts[1].size(), 3u);
    EXPECT_EQ(counts[1][1].dispatches + 2, counts[0][1].dispatches) << "layer 0: Q, K and V stacked";
    EXPECT_EQ(counts[1][2].dispatches + 1, counts[0][2].dispatches) << "layer 1: Q and K stacked";
    EXPECT_EQ(counts[1][1].barriers, counts[0][1].barriers);
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
    std::filesystem::remove(path);
}

TEST(QuantizedInputsPolicy, ABadValueIsAClearError) {
    VKLLM_REQUIRE_SHARED(shared);
    auto model = Model::load(shared + "/models/stories260K/stories260K-Q4_0.gguf");
    const auto& in = model->internals();
    for (const char* name : {"VKLLM_MATVEC_XQ", "VKLLM_MATVEC_XQ_SINGLE"}) {
        test::ScopedEnv bad(name, "on");
        try {
            model::Forward f(in.context(), in.spec(), in.weights(), 16, 4);
            FAIL() << "accepted " << name << "=on";
        } catch (const model::ModelError& e) {
            EXPECT_NE(std::string(e.what()).find(std::string(name) + " must be 0 or 1"), std::string::npos) << e.what();
        }
    }
}

}  // namespace
}  // namespace vkllm
