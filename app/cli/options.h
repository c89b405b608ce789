// Command-line option parsing shared by the subcommands.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "commands.h"

namespace vkllm::cli {

// A usage mistake: the message is printed with the command's usage line, exit code 2.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// `-h` or `--help`: the command prints its usage on stdout and exits 0.
struct HelpRequested : std::runtime_error {
    HelpRequested() : std::runtime_error("help requested") {}
};

// Parses `-x VALUE`, `--long VALUE` and `--flag` arguments. `valued` lists the options that take
// a value, `flags` those that do not; -h and --help throw HelpRequested; anything else is a
// UsageError.
class Options {
public:
    Options(const Args& args, const std::set<std::string>& valued, const std::set<std::string>& flags);
    bool has(const std::string& name) const { return values_.count(name) > 0; }
    std::string str(const std::string& name, const std::string& fallback = "") const;
    int64_t integer(const std::string& name, int64_t fallback) const;
    double real(const std::string& name, double fallback) const;

private:
    std::map<std::string, std::string> values_;
};

// Runs a command body, turning UsageError into exit code 2 with the usage text on stderr, and
// HelpRequested into exit code 0 with it on stdout.
int with_usage(const char* usage, int (*body)(const Args&), const Args& args);

}  // namespace vkllm::cli
