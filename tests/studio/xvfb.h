// What the studio's Xvfb tests share: an X server of their own on a free display number (stopped
// at the end), and the vkllm-studio binary under test.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "test_support.h"

namespace vkllm::test {

// Each test program passes its own first display number, so programs that CTest runs side by
// side look for free displays in different ranges.
class Xvfb {
public:
    explicit Xvfb(int first_display, const std::string& screen = "1280x800x24") {
        namespace fs = std::filesystem;
        display_ = first_display - 1;
        for (int d = first_display + int(getpid() % 50); d < first_display + 250; ++d) {
            if (fs::exists(socket_of(d)) || fs::exists("/tmp/.X" + std::to_string(d) + "-lock")) continue;
            display_ = d;
            break;
        }
        const std::string name = display();
        pid_ = fork();
        if (pid_ == 0) {
            execlp("Xvfb", "Xvfb", name.c_str(), "-screen", "0", screen.c_str(), "-nolisten", "tcp", (char*)nullptr);
            _exit(127);
        }
        // Ready when its socket appears; an Xvfb that exits (a display taken meanwhile) is not.
        for (int i = 0; i < 100 && !fs::exists(socket_of(display_)); ++i) {
            int status = 0;
            if (waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }
    ~Xvfb() {
        if (pid_ > 0) {
            kill(pid_, SIGTERM);
            waitpid(pid_, nullptr, 0);
        }
    }
    Xvfb(const Xvfb&) = delete;
    Xvfb& operator=(const Xvfb&) = delete;

    bool running() const { return pid_ > 0 && std::filesystem::exists(socket_of(display_)); }
    std::string display() const { return ":" + std::to_string(display_); }

private:
    static std::string socket_of(int d) { return "/tmp/.X11-unix/X" + std::to_string(d); }
    int display_ = 0;
    pid_t pid_ = -1;
};

// vkllm-studio: $VKLLM_STUDIO_BIN, else beside the vkllm binary under test.
inline std::string studio_binary() {
    if (const char* bin = std::getenv("VKLLM_STUDIO_BIN")) return bin;
    return (std::filesystem::path(vkllm_bin()).parent_path() / "vkllm-studio").string();
}

}  // namespace vkllm::test
