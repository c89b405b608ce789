// The studio's frame log (`vkllm-studio --frame-log FILE`): one line per frame saying when it
// ended, how long it took and where that time went, so a slow frame can be told apart from a
// frame that did nothing unusual on a starved CPU. Fields, tab-separated `key=value`:
//   t        milliseconds since the loop started, at the frame's end
//   up       milliseconds since the studio started (main), at the frame's end
//   ms       the frame: time since the previous frame's end (the sum of the parts below, plus
//            what no part measures)
//   gen      1 while the worker generates (the frames the benchmark counts)
//   wait     waiting for events (an idle studio sleeps here)
//   prep     theme, probe selection and the backend's new frame (ImGui, GLFW events)
//   state    the worker state's version, when this frame picked up a new one (else absent)
//   tok      with state: the tokens of the newest answer in it (the first frame with tok=1
//            shows the first token: its `up` is the time to first token from the start)
//   vm       rebuilding the view-models for that state (compute_view_models)
//   draw     the panels, menus and status bar (the rest of the frame's ImGui calls)
//   end      rendering and presenting (end_frame: the drawing device and the swapchain)
//   shot     reading back and writing a screenshot
//   script   the headless script's step after the frame (its time falls in the next frame's ms)
//   panels   each panel whose draw took at least kSlowPanelMs, as Name:ms
// The file is flushed every line, so a run killed mid-way keeps its frames.
#pragma once

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace vkllm::studio {

class FrameLog {
public:
    using Clock = std::chrono::steady_clock;
    static constexpr double kSlowPanelMs = 2.0;

    // The studio's start: main calls it first, the log's `up` counts from it.
    static Clock::time_point process_start() {
        static const Clock::time_point t = Clock::now();
        return t;
    }

    FrameLog() = default;
    FrameLog(const FrameLog&) = delete;
    FrameLog& operator=(const FrameLog&) = delete;
    ~FrameLog() {
        if (f_) fclose(f_);
    }
    // Starts writing to `path` (empty: off). Throws std::runtime_error when it cannot be created.
    void open(const std::string& path) {
        if (path.empty()) return;
        f_ = fopen(path.c_str(), "w");
        if (!f_) throw std::runtime_error("--frame-log: cannot write " + path);
        t0_ = Clock::now();
    }
    bool on() const { return f_ != nullptr; }

    // A stopwatch for one part of the frame: the milliseconds since the last call (or start).
    static double lap(Clock::time_point& t) {
        const Clock::time_point now = Clock::now();
        const double ms = std::chrono::duration<double, std::milli>(now - t).count();
        t = now;
        return ms;
    }

    // The current frame's record, filled by the loop as the frame goes.
    double wait = 0, prep = 0, vm = 0, draw = 0, end = 0, shot = 0, script = 0;
    uint64_t new_state = 0;  // the version picked up (0: none)
    size_t answer_tokens = 0;  // with new_state: the newest answer's tokens
    std::vector<std::pair<const char*, double>> panels;
    void panel(const char* name, double ms) {
        if (on() && ms >= kSlowPanelMs) panels.emplace_back(name, ms);
    }

    // Writes the frame's line and clears the record.
    void write(double frame_ms, bool generating) {
        if (f_) {
            const Clock::time_point now = Clock::now();
            const double t = std::chrono::duration<double, std::milli>(now - t0_).count();
            const double up = std::chrono::duration<double, std::milli>(now - process_start()).count();
            std::string line = fmt("t=%.1f", t) + fmt("\tup=%.1f", up) + fmt("\tms=%.1f", frame_ms) + fmt("\tgen=%d", generating ? 1 : 0) +
                               fmt("\twait=%.1f", wait) + fmt("\tprep=%.1f", prep);
            if (new_state)
                line += fmt("\tstate=%llu", static_cast<unsigned long long>(new_state)) +
                        fmt("\ttok=%zu", answer_tokens) + fmt("\tvm=%.1f", vm);
            line += fmt("\tdraw=%.1f", draw) + fmt("\tend=%.1f", end);
            if (shot > 0) line += fmt("\tshot=%.1f", shot);
            line += fmt("\tscript=%.1f", script);
            if (!panels.empty()) {
                line += "\tpanels=";
                for (size_t i = 0; i < panels.size(); ++i)
                    line += (i ? "," : "") + std::string(panels[i].first) + fmt(":%.1f", panels[i].second);
            }
            line += '\n';
            fputs(line.c_str(), f_);
            fflush(f_);
        }
        wait = prep = vm = draw = end = shot = script = 0;
        new_state = 0;
        answer_tokens = 0;
        panels.clear();
    }

private:
    template <class T> static std::string fmt(const char* format, T v) {
        char b[64];
        snprintf(b, sizeof b, format, v);
        return b;
    }
    FILE* f_ = nullptr;
    Clock::time_point t0_;
};

}  // namespace vkllm::studio
