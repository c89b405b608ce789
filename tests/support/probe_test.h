// What the probe test programs (tests/model/test_probes_*.cpp) share: the zoo models and a prompt
// of them long enough to run in several passes of a small n_batch, a relative error of logits,
// the check that the last layer's logit lens is the model's own output. Header-only: each test program compiles only its own file and test_support.cpp.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "model/model_internal.h"
#include "param_names.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm::test {

// 20-odd tokens in the zoo's vocabulary: several passes of n_batch 5 or 7.
inline constexpr const char* kProbeText =
    "Once upon a time, Mira found a small red box. \"Open it,\" said Tom. Inside were three keys: one, two, three.";

// assets/zoo/<name>.gguf.
inline std::unique_ptr<Model> zoo_model(const std::string& name) {
    return Model::load(source_dir() + "/assets/zoo/" + name + ".gguf");
}

// The random gpt-oss golden model (learned attention sinks).
inline std::unique_ptr<Model> gptoss_model() { return Model::load(source_dir() + "/tests/golden/moe/gptoss.gguf"); }

// `text` in the model's tokens, after BOS.
inline std::vector<int32_t> prompt_of(const Model& m, const std::string& text) {
    return m.internals().tokenizer().encode(text, true, false);
}

// max |a - b| over max |b|: a relative error that ignores the sign and scale of single values.
inline double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double m = 0;
    for (float x : b) m = std::max(m, double(std::fabs(x)));
    return max_abs_diff(a, b) / std::max(m, 1e-30);
}

// softmax of n logits, in double and rounded once.
inline std::vector<float> softmax_of(const float* logits, size_t n) {
    const float mx = *std::max_element(logits, logits + n);
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += std::exp(double(logits[i]) - mx);
    std::vector<float> p(n);
    for (size_t i = 0; i < n; ++i) p[i] = float(std::exp(double(logits[i]) - mx) / sum);
    return p;
}

// The last layer's lens is the model's own next-token distribution: at position `newest`, its
// top token the argmax of `last_logits` and each entry's probability their softmax's, in
// decreasing order.
inline void expect_last_lens_is_the_output(const ProbeResults& r, const std::vector<float>& last_logits, int n_layer,
                                           int newest) {
    auto it = std::find_if(r.logit_lens.begin(), r.logit_lens.end(), [&](const LogitLens& l) { return l.layer == n_layer - 1; });
    ASSERT_NE(it, r.logit_lens.end());
    EXPECT_EQ(it->position, newest);
    ASSERT_FALSE(it->top.empty());
    const auto argmax = std::max_element(last_logits.begin(), last_logits.end()) - last_logits.begin();
    EXPECT_EQ(it->top[0].id, argmax);
    const auto p = softmax_of(last_logits.data(), last_logits.size());
    for (size_t i = 0; i < it->top.size(); ++i) {
        EXPECT_NEAR(it->top[i].p, p[size_t(it->top[i].id)], 1e-5) << "lens rank " << i;
        if (i) { EXPECT_GE(it->top[i - 1].p, it->top[i].p); }
    }
}

}  // namespace vkllm::test
