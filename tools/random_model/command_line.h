// The command line of vkllm-random-model, in the library so that tests can rebuild a model from
// the same options a script used (tests/golden/families/models.txt).
#pragma once

#include <string>
#include <vector>

#include "random_model/random_model.h"

namespace vkllm::random_model {

struct CommandLine {
    RandomModelConfig config;
    std::string out;    // --out (empty when not given)
    std::string vocab;  // --vocab-from, else the default passed to parse_command_line
    bool help = false;  // -h / --help
    int threads = 0;    // --threads: tensors made at once (0: one per core; the file is the same for any)
};

// Parses the options (without the program name). Throws ConfigError naming a bad option.
CommandLine parse_command_line(const std::vector<std::string>& args, const std::string& default_vocab);

// Splits a line of options at spaces and tabs (no quoting: no option value contains a space).
std::vector<std::string> split_words(const std::string& line);

// The --help text.
std::string usage(const std::string& default_vocab);

}  // namespace vkllm::random_model
