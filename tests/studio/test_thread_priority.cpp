// The engine thread's lower CPU priority (thread_priority.h): it applies to the calling thread
// alone, threads it starts afterwards inherit it (as the Vulkan driver's threads do when the
// engine makes its device), and out-of-range values are refused.
#include <gtest/gtest.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <thread>

#include "thread_priority.h"

#if defined(__linux__)
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace {

using vkllm::studio::lower_thread_priority;

TEST(ThreadPriority, RefusesValuesOutsideOneToNineteen) {
    EXPECT_THROW(lower_thread_priority(0), std::invalid_argument);
    EXPECT_THROW(lower_thread_priority(20), std::invalid_argument);
    EXPECT_THROW(lower_thread_priority(-5), std::invalid_argument);
}

#if defined(__linux__)
int own_nice() {
    errno = 0;
    return getpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)));
}

TEST(ThreadPriority, LowersTheCallingThreadAndWhatItStartsOnly) {
    const int before = own_nice();
    if (before >= 7) GTEST_SKIP() << "the test already runs at nice " << before;
    int lowered = -100, inherited = -100, policy = -1;
    std::string error;
    std::thread engine([&] {
        error = lower_thread_priority(7);
        lowered = own_nice();
        policy = sched_getscheduler(0);
        std::thread child([&] { inherited = own_nice(); });  // as a driver's worker thread
        child.join();
    });
    engine.join();
    ASSERT_EQ(error, "");
    EXPECT_EQ(lowered, 7);
    EXPECT_EQ(inherited, 7);
    EXPECT_EQ(policy, SCHED_BATCH);
    EXPECT_EQ(own_nice(), before) << "the caller's other threads (the UI) keep their priority";
}
#endif

}  // namespace
