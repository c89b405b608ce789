// Session::prepare for the commands that answer a prompt (run, chat), with a note on stderr
// while it takes long: "vkllm: preparing shaders 37/120".
#pragma once

#include "vkllm/session.h"

namespace vkllm::cli {

struct Prepared {
    int compiled = 0;     // pipelines compiled
    double seconds = 0;   // how long it took
    int background = 0;   // the decode step's, still compiling in the background at return
};

// Compiles the pipelines a first prompt of prompt_tokens tokens needs (0: the engine's default
// guess). Says nothing when it is quick (a warm start); past about a second it says how far it
// is on stderr: on a terminal one line rewritten in place and ended when done, otherwise one
// line, once; the decode step's pipelines left compiling in the background are named at the end.
// Never writes to stdout.
Prepared prepare_with_note(Session& session, int prompt_tokens = 0);

}  // namespace vkllm::cli
