// Decode replay (model::Forward): a one-token step without probes is recorded once per
// Forward::kReplayKeys positions and its command buffer submitted again. Against a Forward that
// records every step, on every zoo layer kind: 130 greedy decode steps (three recordings; the
// sliding-window model's ring of 39 slots wraps several times), then a truncation and more
// steps. The logits agree within float rounding (the keys in view round up, which may change
// how attention splits its keys), the greedy tokens are the same, almost every step is a
// replay, and the validation layer (synchronization validation included) reports nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "model/forward.h"
#include "model/model_internal.h"
#include "param_names.h"
#include "test_support.h"
#include "vkllm/model.h"

namespace vkllm {
namespace {

int32_t argmax(const std::vector<float>& v) {
    return int32_t(std::max_element(v.begin(), v.end()) - v.begin());
}

class Replay : public ::testing::TestWithParam<std::string> {};

TEST_P(Replay, DecodeStepsEqualRecordedSteps) {
    const uint64_t errors_before = gpu::validation_error_count();
    auto model = Model::load(test::source_dir() + "/assets/zoo/" + GetParam() + ".gguf");
    const auto& in = model->internals();
    const int n_vocab = in.spec().n_vocab;
    model::Forward replayed(in.context(), in.spec(), in.weights(), /*n_ctx=*/256, /*n_batch=*/8);
    model::Forward recorded(in.context(), in.spec(), in.weights(), /*n_ctx=*/256, /*n_batch=*/8);
    recorded.set_replay(false);
    std::vector<float> a(static_cast<size_t>(n_vocab)), b(static_cast<size_t>(n_vocab));
    const ProbeConfig off;
    const std::vector<int32_t> prompt{1, 5, 9, 13, 17};
    replayed.step(prompt.data(), int(prompt.size()), 0, false, a.data(), off, nullptr);
    recorded.step(prompt.data(), int(prompt.size()), 0, false, b.data(), off, nullptr);

    auto decode = [&](int from, int steps) {
        for (int pos = from; pos < from + steps; ++pos) {
            const int32_t next = argmax(a);
            ASSERT_EQ(next, argmax(b)) << "position " << pos;
            replayed.step(&next, 1, pos, false, a.data(), off, nullptr);
            recorded.step(&next, 1, pos, false, b.data(), off, nullptr);
            float scale = 1.0f, diff = 0.0f;
            for (int v = 0; v < n_vocab; ++v) {
                scale = std::max(scale, std::fabs(b[size_t(v)]));
                diff = std::max(diff, std::fabs(a[size_t(v)] - b[size_t(v)]));
            }
            ASSERT_LE(diff, 1e-5f * scale) << "position " << pos;
        }
    };
    const int p0 = int(prompt.size());
    decode(p0, 130);
    // Three recordings (keys in view 64, 128, 192), every other step replayed.
    EXPECT_EQ(replayed.replayed_steps(), 130u - 3u);
    EXPECT_EQ(recorded.replayed_steps(), 0u);

    // Back to position 100 and on again: the recording for 64..127 keys is made anew once.
    if (replayed.truncate(100) && recorded.truncate(100)) {
        decode(100, 30);
    }
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

INSTANTIATE_TEST_SUITE_P(Zoo, Replay, ::testing::Values("zoo-dense", "zoo-swa", "zoo-moe", "zoo-mla"),
                         test::ModelParamName());

}  // namespace
}  // namespace vkllm
