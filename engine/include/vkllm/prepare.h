// Compiling a session's GPU pipelines ahead of its first answer (Session::prepare).
//
// A GPU driver turns each compute pipeline into machine code the first time a program uses it:
// on a fresh machine that is seconds per pipeline on lavapipe (the CPU driver), less on GPU
// drivers, and it would otherwise happen in the middle of the first forward pass. Preparing
// compiles the pipelines the first prompt and the decode steps after it will use, on several
// threads, and says how far it got; later runs find them in the drivers' caches. Where the
// driver compiles at the first dispatch (lavapipe), preparing returns once the prompt's
// pipelines are compiled and the decode step's keep compiling in the background while the prompt
// runs: the first decode step waits only for those not finished by then.
#pragma once

#include <functional>
#include <string>

namespace vkllm {

// How far a preparation is: `done` of `total` pipelines compiled, `what` the last one finished
// (its shader variant and specialization, "matmul_f32:64:32:32:16:4:4"; empty before the first).
// `background`: of `done`, the decode step's pipelines handed to the background rather than
// compiled yet (reported once, last, with done == total).
struct PrepareProgress {
    int done = 0, total = 0;
    std::string what;
    int background = 0;
};

// Called on the thread that runs the preparation: once before any work (done 0), after each
// pipeline, and at least every quarter second while it waits. Throwing from it stops the
// preparation (the exception reaches prepare's caller; what was compiled stays compiled).
using PrepareCallback = std::function<void(const PrepareProgress&)>;

struct PrepareOptions {
    // The length of the first prompt in tokens: the matrix kernels' tiles depend on it (a
    // prompt of a different length may need a few pipelines more, compiled when first used).
    int prompt_tokens = 16;
    // Threads compiling at once; 0: one per idle CPU core (the cores less the 1-minute load
    // average, at least one: on a busy machine more threads only share the same cores).
    int threads = 0;
};

}  // namespace vkllm
