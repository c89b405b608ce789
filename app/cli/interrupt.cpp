#include "interrupt.h"

#include <chrono>
#include <csignal>

namespace vkllm::cli {

namespace {

volatile std::sig_atomic_t g_sigint = 0;
// A second Ctrl-C does not wait: it ends the process as SIGINT normally does.
void on_sigint(int) {
    if (g_sigint) {
        std::signal(SIGINT, SIG_DFL);
        std::raise(SIGINT);
    }
    g_sigint = 1;
}

void install_handler() {
    g_sigint = 0;
    struct sigaction sa = {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
}

}  // namespace

InterruptFlag::InterruptFlag() { install_handler(); }

InterruptFlag::~InterruptFlag() { std::signal(SIGINT, SIG_DFL); }

bool InterruptFlag::interrupted() const { return g_sigint != 0; }

InterruptWatch::InterruptWatch(Session& session) {
    install_handler();
    watcher_ = std::thread([this, &session] {
        while (!done_.load()) {
            if (g_sigint) {
                session.cancel();
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    });
}

InterruptWatch::~InterruptWatch() {
    done_ = true;
    watcher_.join();
    std::signal(SIGINT, SIG_DFL);
}

bool InterruptWatch::interrupted() const { return g_sigint != 0; }

}  // namespace vkllm::cli
