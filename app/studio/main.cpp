// vkllm-studio: a desktop chat that shows the model thinking (docs/studio.md).
#include <cstdio>
#include <exception>
#include <stdexcept>

#include "studio_app.h"

int main(int argc, char** argv) {
    using namespace vkllm::studio;
    StudioOptions options;
    try {
        options = parse_options(argc, argv);
    } catch (const std::invalid_argument& e) {
        if (*e.what()) fprintf(stderr, "vkllm-studio: %s\n", e.what());
        fputs(usage().c_str(), *e.what() ? stderr : stdout);
        return *e.what() ? 2 : 0;
    }
    try {
        StudioApp app(options);
        return app.run();
    } catch (const std::exception& e) {
        fprintf(stderr, "vkllm-studio: %s\n", e.what());
        return 1;
    }
}
