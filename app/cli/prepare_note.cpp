#include "prepare_note.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace vkllm::cli {

Prepared prepare_with_note(Session& session, int prompt_tokens) {
    using Clock = std::chrono::steady_clock;
    const Clock::time_point start = Clock::now();
    const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
    const bool tty = isatty(STDERR_FILENO);
    bool shown = false;
    PrepareOptions options;
    if (prompt_tokens > 0) options.prompt_tokens = prompt_tokens;
    const PrepareProgress last = session.prepare(options, [&](const PrepareProgress& p) {
        if (p.total == 0 || elapsed() < 1.0 || (shown && !tty)) return;
        std::fprintf(stderr, tty ? "\rvkllm: preparing shaders %d/%d" : "vkllm: preparing shaders %d/%d\n", p.done,
                     p.total);
        std::fflush(stderr);
        shown = true;
    });
    const Prepared out{last.total - last.background, elapsed(), last.background};
    if (shown && tty) std::fprintf(stderr, "\rvkllm: prepared %d shaders in %.1f s", out.compiled, out.seconds);
    if (shown && out.background > 0)
        std::fprintf(stderr, "%s%d more for the decode step compiling in the background\n", tty ? ", " : "vkllm: ",
                     out.background);
    else if (shown && tty)
        std::fprintf(stderr, "\n");
    return out;
}

}  // namespace vkllm::cli
