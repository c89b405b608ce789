// One Model shared by Sessions on different threads (model.h's threading contract): each
// thread's greedy generation equals the same generation run alone. Pipelines created, buffers
// uploaded and command buffers submitted concurrently go through the Context's locks.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "gpu_test.h"
#include "test_support.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

class SharedModel : public test::GpuTest {};

std::vector<int32_t> greedy_tokens(const Model& m, const std::string& prompt, int n) {
    Session s(m);
    GenerateOptions o;
    o.sampler.temperature = 0.0f;
    o.max_tokens = n;
    GenerateResult r = s.generate(m.tokenize(prompt, true), o);
    EXPECT_NE(r.reason, StopReason::Error) << r.message;
    return r.tokens;
}

TEST_F(SharedModel, SessionsOnSeveralThreadsGenerateWhatTheyGenerateAlone) {
    // A fresh Model for this test, so the threads also race to create its first pipelines.
    for (const char* file : {"zoo-dense", "zoo-moe"}) {
        SCOPED_TRACE(file);
        const std::string path = test::source_dir() + "/assets/zoo/" + file + ".gguf";
        const std::vector<std::string> prompts = {"Once upon a time", "Tom had a red ball", "The sun was hot",
                                                  "Lily said, \"Look!\""};
        std::vector<std::vector<int32_t>> together(prompts.size());
        {
            auto model = Model::load(path);
            std::vector<std::thread> threads;
            for (size_t i = 0; i < prompts.size(); ++i)
                threads.emplace_back([&, i] { together[i] = greedy_tokens(*model, prompts[i], 8); });
            for (auto& t : threads) t.join();
        }
        auto model = Model::load(path);
        for (size_t i = 0; i < prompts.size(); ++i) {
            EXPECT_EQ(together[i], greedy_tokens(*model, prompts[i], 8)) << prompts[i];
            EXPECT_EQ(together[i].size(), 8u);
        }
    }
}

}  // namespace
}  // namespace vkllm
