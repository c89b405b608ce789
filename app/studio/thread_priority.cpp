#include "thread_priority.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#if defined(__linux__)
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#elif defined(__APPLE__)
#include <pthread.h>
#include <sys/qos.h>
#elif defined(_WIN32)
#include <windows.h>
#endif

namespace vkllm::studio {

std::string lower_thread_priority(int nice) {
    if (nice < 1 || nice > 19) throw std::invalid_argument("a thread's nice value is 1 to 19, got " + std::to_string(nice));
#if defined(__linux__)
    // Linux keeps the policy and the nice value per thread (PRIO_PROCESS with a thread id names
    // that thread alone), and a new thread starts with its creator's.
    // SCHED_BATCH is a hint (no wake-up preemption of the others): where it is refused, the nice
    // value alone does the work.
    const pid_t tid = pid_t(syscall(SYS_gettid));
    sched_param param{};
    (void)sched_setscheduler(0, SCHED_BATCH, &param);
    if (setpriority(PRIO_PROCESS, id_t(tid), nice) != 0) return std::string("setpriority: ") + std::strerror(errno);
    return {};
#elif defined(__APPLE__)
    // No per-thread nice: the quality-of-service class that schedules below the user's own.
    (void)nice;
    const int rc = pthread_set_qos_class_self_np(QOS_CLASS_UTILITY, 0);
    return rc == 0 ? std::string() : std::string("pthread_set_qos_class_self_np: ") + std::strerror(rc);
#elif defined(_WIN32)
    const int level = nice >= 15 ? THREAD_PRIORITY_LOWEST : THREAD_PRIORITY_BELOW_NORMAL;
    return SetThreadPriority(GetCurrentThread(), level) ? std::string() : std::string("SetThreadPriority failed");
#else
    (void)nice;
    return "no way to lower a thread's priority on this system";
#endif
}

}  // namespace vkllm::studio
