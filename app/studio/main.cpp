// vkllm-studio: a desktop chat that shows the model thinking (docs/studio.md).
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "frame_log.h"
#include "studio_app.h"

namespace {

// `--frame-log FILE` (frame_log.h) is taken out of the arguments before the others are parsed.
std::string take_frame_log(std::vector<char*>& args) {
    std::string path;
    for (size_t i = 1; i < args.size();) {
        if (std::strcmp(args[i], "--frame-log") != 0) {
            ++i;
            continue;
        }
        if (i + 1 >= args.size()) throw std::invalid_argument("--frame-log needs a file");
        path = args[i + 1];
        args.erase(args.begin() + std::ptrdiff_t(i), args.begin() + std::ptrdiff_t(i) + 2);
    }
    return path;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace vkllm::studio;
    FrameLog::process_start();  // the frame log's `up` counts from here
    StudioOptions options;
    std::string frame_log;
    try {
        std::vector<char*> args(argv, argv + argc);
        frame_log = take_frame_log(args);
        options = parse_options(int(args.size()), args.data());
    } catch (const std::invalid_argument& e) {
        if (*e.what()) fprintf(stderr, "vkllm-studio: %s\n", e.what());
        fputs(usage().c_str(), *e.what() ? stderr : stdout);
        fputs("  --frame-log FILE     one line per frame: its time and what it did (docs/studio.md)\n",
              *e.what() ? stderr : stdout);
        return *e.what() ? 2 : 0;
    }
    try {
        StudioApp app(options);
        app.frame_log_path = frame_log;
        return app.run();
    } catch (const std::exception& e) {
        fprintf(stderr, "vkllm-studio: %s\n", e.what());
        return 1;
    }
}
