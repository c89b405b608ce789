// Cancelling a render (ChatTemplateInputs::cancelled and the plain-messages overload's
// parameter): the callback is polled as the template works, whatever it does, and a true
// answer stops it with a TemplateError whose cancelled() is true.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "vkllm/chat_template.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Templates that run long (each for a good part of a second when not stopped): a loop of
// expressions, a list rebuilt in a loop, one large operation after another, a macro
// called in a loop.
const char* kSlow[] = {
    "{% for i in range(999999) %}{{ i }}{% endfor %}",
    "{% set ns=namespace(x=[]) %}{% for i in range(999999) %}{% set ns.x = ns.x + [i] %}{% endfor %}",
    "{% set s = 'x' * 30000000 %}{% for i in range(999999) %}{% set t = s ~ '' %}{% endfor %}",
    "{% macro m(i) %}{{ i }}{% endmacro %}{% for i in range(999999) %}{{ m(i) }}{% endfor %}",
};

// Renders `source` with a callback that says "cancelled" once `after` has passed; returns the
// error and how long the render went on after the first true answer.
vkllm::TemplateError cancelled_render(const std::string& source, Clock::duration after, double& latency) {
    vkllm::ChatTemplateInputs in;
    in.now = "2024-01-01";
    const Clock::time_point start = Clock::now();
    Clock::time_point first_true{};
    in.cancelled = [&] {
        if (Clock::now() - start < after) return false;
        if (first_true == Clock::time_point{}) first_true = Clock::now();
        return true;
    };
    try {
        vkllm::render_chat_template(source, in);
    } catch (const vkllm::TemplateError& e) {
        latency = first_true == Clock::time_point{} ? -1 : seconds(Clock::now() - first_true);
        return e;
    }
    ADD_FAILURE() << "rendered without being cancelled: " << source;
    return vkllm::TemplateError("", 0, 0);
}

}  // namespace

TEST(TemplateCancellation, StopsEveryKindOfSlowTemplateQuickly) {
    for (const char* source : kSlow) {
        double latency = 0;
        const vkllm::TemplateError e = cancelled_render(source, std::chrono::milliseconds(20), latency);
        EXPECT_TRUE(e.cancelled()) << source << "\n" << e.what();
        EXPECT_FALSE(e.raised());
        EXPECT_EQ(std::string(e.what()), "rendering was cancelled");
        EXPECT_EQ(e.line(), 0);
        EXPECT_GE(latency, 0) << source;
        EXPECT_LT(latency, 0.5) << source;  // wall time, on a machine that may be loaded
    }
}

TEST(TemplateCancellation, CallbackIsPolledAndCanLetTheRenderFinish) {
    vkllm::ChatTemplateInputs in;
    int calls = 0;
    in.cancelled = [&] {
        ++calls;
        return false;
    };
    EXPECT_EQ(vkllm::render_chat_template("{% for i in range(3) %}{{ i }}{% endfor %}", in), "012");
    EXPECT_GE(calls, 1);  // at the start at least
    calls = 0;
    vkllm::render_chat_template("{% for i in range(200000) %}{{ i }}{% endfor %}", in);
    EXPECT_GE(calls, 10);  // and as it works
}

TEST(TemplateCancellation, FlipsAfterSomeCalls) {
    // A callback that answers true from its fifth call on: the render stops then.
    vkllm::ChatTemplateInputs in;
    int calls = 0;
    in.cancelled = [&] { return ++calls >= 5; };
    try {
        vkllm::render_chat_template("{% for i in range(999999) %}{{ i }}{% endfor %}", in);
        ADD_FAILURE() << "not cancelled";
    } catch (const vkllm::TemplateError& e) {
        EXPECT_TRUE(e.cancelled());
        EXPECT_EQ(calls, 5);
    }
}

TEST(TemplateCancellation, AlreadyCancelledDoesNotStart) {
    vkllm::ChatTemplateInputs in;
    in.cancelled = [] { return true; };
    try {
        vkllm::render_chat_template("hello", in);
        ADD_FAILURE() << "not cancelled";
    } catch (const vkllm::TemplateError& e) {
        EXPECT_TRUE(e.cancelled());
    }
}

TEST(TemplateCancellation, PlainMessagesOverloadTakesACallback) {
    const std::vector<vkllm::ChatMessage> messages = {{"user", "hi"}};
    const std::string source = "{% for m in messages %}{{ m.content }}{% endfor %}";
    EXPECT_EQ(vkllm::render_chat_template(source, messages, false), "hi");
    EXPECT_EQ(vkllm::render_chat_template(source, messages, false, "", "", [] { return false; }), "hi");
    try {
        vkllm::render_chat_template(source, messages, false, "", "", [] { return true; });
        ADD_FAILURE() << "not cancelled";
    } catch (const vkllm::TemplateError& e) {
        EXPECT_TRUE(e.cancelled());
    }
}

TEST(TemplateCancellation, FromAnotherThread) {
    // The way a front-end uses it: a flag another thread sets (a signal handler's, a closing
    // window's).
    std::atomic<bool> stop{false};
    vkllm::ChatTemplateInputs in;
    in.cancelled = [&] { return stop.load(); };
    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        stop = true;
    });
    const Clock::time_point start = Clock::now();
    bool cancelled = false;
    try {
        vkllm::render_chat_template(kSlow[0], in);
    } catch (const vkllm::TemplateError& e) {
        cancelled = e.cancelled();
    }
    stopper.join();
    EXPECT_TRUE(cancelled);
    EXPECT_LT(seconds(Clock::now() - start), 2.0);
}

TEST(TemplateCancellation, OtherErrorsAreNotCancellations) {
    vkllm::ChatTemplateInputs in;
    in.cancelled = [] { return false; };
    try {
        vkllm::render_chat_template("{{ raise_exception('no') }}", in);
    } catch (const vkllm::TemplateError& e) {
        EXPECT_FALSE(e.cancelled());
        EXPECT_TRUE(e.raised());
    }
    try {
        vkllm::render_chat_template("{% set ns=namespace(x=[]) %}{% for i in range(999999) %}{% set ns.x = ns.x + [i] %}{% endfor %}", in);
    } catch (const vkllm::TemplateError& e) {
        EXPECT_FALSE(e.cancelled());
        EXPECT_NE(std::string(e.what()).find("too much work"), std::string::npos);
    }
}
