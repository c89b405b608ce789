// Ctrl-C during a generation: SIGINT sets a flag, and a watcher thread cancels the Session
// (Session::cancel, which the engine checks before every forward pass), so a long prompt stops
// too. The current token finishes; the command then ends normally, so destructors run (the
// pipeline cache is saved) and it can print what it has.
#pragma once

#include <atomic>
#include <thread>

#include "vkllm/session.h"

namespace vkllm::cli {

// Ctrl-C during work that polls rather than a Session's (rendering a chat template, whose
// ChatTemplateInputs::cancelled can be `[&] { return flag.interrupted(); }`): SIGINT sets the
// flag instead of ending the process, so the work stops and the command ends normally; a second
// Ctrl-C ends the process as SIGINT normally does.
class InterruptFlag {
public:
    InterruptFlag();   // installs the SIGINT handler
    ~InterruptFlag();  // SIGINT is default again
    InterruptFlag(const InterruptFlag&) = delete;
    InterruptFlag& operator=(const InterruptFlag&) = delete;

    bool interrupted() const;  // Ctrl-C was pressed since construction
};

class InterruptWatch {
public:
    explicit InterruptWatch(Session& session);  // installs the SIGINT handler, starts the watcher
    ~InterruptWatch();                          // stops the watcher; SIGINT is default again
    InterruptWatch(const InterruptWatch&) = delete;
    InterruptWatch& operator=(const InterruptWatch&) = delete;

    bool interrupted() const;  // Ctrl-C was pressed since construction

private:
    std::atomic<bool> done_{false};
    std::thread watcher_;
};

}  // namespace vkllm::cli
