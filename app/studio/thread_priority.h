// The engine's compute below the UI on the CPU. On a CPU Vulkan driver (lavapipe) the engine's
// dispatches run on worker threads the driver starts from the thread that made the device, on
// the same cores as the UI's own drawing (also lavapipe there): at one priority the drawing of a
// frame waited up to seconds for a core while a long prompt was evaluated. The engine worker
// therefore lowers its own thread's priority before it makes a device; the threads it starts
// afterwards (the driver's, the background pipeline compiles) inherit it, and the UI thread and
// its drawing device, made earlier on the main thread, keep theirs.
#pragma once

#include <string>

namespace vkllm::studio {

// The nice value the engine's thread runs at by default (0 to 19; 0 leaves it as the UI's).
constexpr int kEngineNice = 10;

// Lowers the calling thread's CPU priority to `nice` (1 to 19, Linux's scale; larger is lower)
// and marks it a batch (compute-bound) thread where the system has that policy (Linux). Returns
// an empty string when the priority was lowered, else why not (the thread then runs on at its priority). Threads started by
// the caller afterwards inherit the setting. A priority once lowered cannot be raised again
// without privileges, so this is called once, with the final value.
std::string lower_thread_priority(int nice);

}  // namespace vkllm::studio
