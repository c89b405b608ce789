// The threading contract of vkllm/session.h: generate() runs on a worker thread while another
// thread takes snapshots and cancels. Every snapshot is consistent (its text is its events'
// texts, its tokens only grow, its steps match its events), and cancel() ends the generation
// within one step. Built once more with ThreadSanitizer by the api_tsan test.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "test_support.h"
#include "vkllm/generate.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

using Clock = std::chrono::steady_clock;

TEST(Threads, SnapshotsWhileGeneratingAreConsistentAndCancelIsPrompt) {
    auto model = Model::load(test::source_dir() + "/assets/zoo/zoo-dense.gguf");
    SessionOptions so;
    so.n_ctx = 256;
    so.probes.residual_stats = true;  // the snapshot copies probes too
    Session session(*model, so);
    const std::vector<int32_t> prompt = model->tokenize("Once upon a time", true);

    GenerateOptions o;
    o.sampler.seed = 7;
    o.max_tokens = so.n_ctx - int(prompt.size());  // far more than the steps before the cancel
    int callback_steps = 0;
    GenerateResult result;
    Clock::time_point finished;
    std::thread worker([&] {
        result = session.generate(prompt, o, [&](const TokenEvent&) {
            ++callback_steps;
            return true;
        });
        finished = Clock::now();
    });

    SessionSnapshot previous;
    int snapshots = 0;
    Clock::time_point cancelled;
    bool cancel_sent = false;
    const Clock::time_point give_up = Clock::now() + std::chrono::seconds(120);
    while (Clock::now() < give_up) {
        const SessionSnapshot s = session.snapshot();
        ++snapshots;
        std::string text;
        for (const TokenEvent& e : s.generated) text += e.text;
        ASSERT_EQ(s.generated_text, text);
        ASSERT_EQ(s.step, int(s.generated.size()));
        for (size_t i = 0; i < s.generated.size(); ++i) ASSERT_EQ(s.generated[i].index, int(i));
        // Tokens only grow: the previous snapshot's are a prefix of these.
        ASSERT_GE(s.tokens.size(), previous.tokens.size());
        ASSERT_TRUE(std::equal(previous.tokens.begin(), previous.tokens.end(), s.tokens.begin()));
        ASSERT_GE(s.step, previous.step);
        if (!s.tokens.empty()) {
            ASSERT_EQ(std::vector<int32_t>(s.tokens.begin(), s.tokens.begin() + long(std::min(s.tokens.size(), prompt.size()))),
                      std::vector<int32_t>(prompt.begin(), prompt.begin() + long(std::min(s.tokens.size(), prompt.size()))));
            ASSERT_FALSE(s.probes.residual.empty()) << "a completed step's probes come with its tokens";
        }
        if (s.generating && s.step >= 5 && !cancel_sent) {
            cancelled = Clock::now();
            session.cancel();
            cancel_sent = true;
        }
        previous = s;
        if (cancel_sent && !s.generating) break;
        std::this_thread::yield();
    }
    worker.join();
    ASSERT_TRUE(cancel_sent) << "the generation never reached 5 steps";
    EXPECT_EQ(result.reason, StopReason::Cancelled) << to_string(result.reason) << " " << result.message;
    const double latency = std::chrono::duration<double>(finished - cancelled).count();
    // One step of this 1M-parameter model takes milliseconds (tens under a sanitizer).
    EXPECT_LT(latency, 5.0);
    EXPECT_LT(int(result.tokens.size()), o.max_tokens);
    EXPECT_EQ(callback_steps, int(result.tokens.size()));
    std::printf("%d snapshots; %zu tokens generated; cancel returned after %.1f ms\n", snapshots,
                result.tokens.size(), latency * 1e3);

    // After the run, the snapshot is the run's final state.
    const SessionSnapshot last = session.snapshot();
    EXPECT_FALSE(last.generating);
    EXPECT_EQ(last.generated_text, result.text);
    EXPECT_EQ(last.step, int(result.tokens.size()));
    EXPECT_EQ(last.tokens, session.tokens());
}

}  // namespace
}  // namespace vkllm
