// vkllm-random-model: writes a random-weight GGUF model that llama.cpp loads (see README.md).
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "random_model/command_line.h"

int main(int argc, char** argv) {
    using namespace vkllm::random_model;
    const std::string default_vocab = VKLLM_DEFAULT_VOCAB;
    try {
        const CommandLine cl = parse_command_line(std::vector<std::string>(argv + 1, argv + argc), default_vocab);
        if (cl.help) {
            std::fputs(usage(default_vocab).c_str(), stdout);
            return 0;
        }
        if (cl.out.empty()) throw ConfigError("--out FILE.gguf is required (see --help)");
        write_random_model(cl.config, cl.vocab, cl.out, cl.threads);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vkllm-random-model: %s\n", e.what());
        return 1;
    }
    return 0;
}
