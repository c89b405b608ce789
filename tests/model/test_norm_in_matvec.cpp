// Decode's pre-norms inside the matvecs (VKLLM_NORM_IN_MATVEC=1, GPUs' default) against the norm
// as its own dispatch (=0, a CPU driver's default), on every zoo layer kind: 60 greedy decode
// steps after a prompt give the same tokens and logits within float rounding (the two sum x^2 in
// different orders), with fewer dispatches and barriers per step and nothing from the validation
// layer. model_test_stories260K.norm_in_matvec holds the fused path to llama.cpp's logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "model/forward.h"
#include "model/model_internal.h"
#include "test_support.h"
#include "vkllm/model.h"

namespace vkllm {
namespace {

int32_t argmax(const std::vector<float>& v) {
    return int32_t(std::max_element(v.begin(), v.end()) - v.begin());
}

std::unique_ptr<model::Forward> make_forward(const Model& m, bool norm_in_matvec) {
    test::ScopedEnv policy("VKLLM_NORM_IN_MATVEC", norm_in_matvec ? "1" : "0");  // read by the constructor
    const auto& in = m.internals();
    return std::make_unique<model::Forward>(in.context(), in.spec(), in.weights(), /*n_ctx=*/128, /*n_batch=*/8);
}

uint32_t total(const std::vector<gpu::Stream::Counts>& counts, bool barriers) {
    uint32_t n = 0;
    for (const auto& c : counts) n += barriers ? c.barriers : c.dispatches;
    return n;
}

class NormInMatvec : public ::testing::TestWithParam<std::string> {};

TEST_P(NormInMatvec, DecodeEqualsTheNormAsItsOwnDispatch) {
    const uint64_t errors_before = gpu::validation_error_count();
    auto model = Model::load(test::source_dir() + "/assets/zoo/" + GetParam() + ".gguf");
    const int n_vocab = model->internals().spec().n_vocab;
    auto fused = make_forward(*model, true), apart = make_forward(*model, false);
    std::vector<float> a(static_cast<size_t>(n_vocab)), b(static_cast<size_t>(n_vocab));
    const ProbeConfig off;
    const std::vector<int32_t> prompt{1, 7, 3, 11, 19, 2};
    fused->step(prompt.data(), int(prompt.size()), 0, false, a.data(), off, nullptr);
    apart->step(prompt.data(), int(prompt.size()), 0, false, b.data(), off, nullptr);
    for (int pos = int(prompt.size()); pos < int(prompt.size()) + 60; ++pos) {
        const int32_t next = argmax(b);
        ASSERT_EQ(argmax(a), next) << "position " << pos;
        fused->step(&next, 1, pos, false, a.data(), off, nullptr);
        apart->step(&next, 1, pos, false, b.data(), off, nullptr);
        float scale = 1.0f, diff = 0.0f;
        for (int v = 0; v < n_vocab; ++v) {
            scale = std::max(scale, std::fabs(b[size_t(v)]));
            diff = std::max(diff, std::fabs(a[size_t(v)] - b[size_t(v)]));
        }
        ASSERT_LE(diff, 1e-4f * scale) << "position " << pos;
    }
    // The last step was a decode step: the fused one has fewer dispatches and barriers.
    EXPECT_LT(total(fused->step_counts(), false), total(apart->step_counts(), false));
    EXPECT_LT(total(fused->step_counts(), true), total(apart->step_counts(), true));
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

INSTANTIATE_TEST_SUITE_P(Zoo, NormInMatvec, ::testing::Values("zoo-dense", "zoo-swa", "zoo-moe", "zoo-mla"),
                         [](const auto& info) {
                             std::string n = info.param;
                             for (char& ch : n)
                                 if (ch == '-') ch = '_';
                             return n;
                         });

TEST(NormInMatvecPolicy, ABadValueIsAClearError) {
    auto model = Model::load(test::source_dir() + "/assets/zoo/zoo-dense.gguf");
    const auto& in = model->internals();
    test::ScopedEnv bad("VKLLM_NORM_IN_MATVEC", "yes");
    try {
        model::Forward f(in.context(), in.spec(), in.weights(), 16, 4);
        FAIL() << "accepted VKLLM_NORM_IN_MATVEC=yes";
    } catch (const model::ModelError& e) {
        EXPECT_NE(std::string(e.what()).find("VKLLM_NORM_IN_MATVEC must be 0 or 1"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace vkllm
