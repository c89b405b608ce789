// Command-line option parsing shared by the subcommands.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include "commands.h"
#include "vkllm/generate.h"
#include "vkllm/session.h"

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
    // The value of `name` as an integer in [lo, hi] (by default the range of `int`, so the usual
    // int(...) of the result never truncates), or `fallback` when absent. Not an integer, or out
    // of range (parsed in 64 bits, overflow included): a UsageError naming the option and range.
    int64_t integer(const std::string& name, int64_t fallback, int64_t lo = std::numeric_limits<int>::min(),
                    int64_t hi = std::numeric_limits<int>::max()) const;
    double real(const std::string& name, double fallback) const;
    // A seed: absent or -1 means a random one (as llama.cpp's --seed -1), else 0 .. 2^63-1.
    uint64_t seed(const std::string& name) const;

private:
    std::map<std::string, std::string> values_;
};

// The text of `-p TEXT` or `-f FILE` (`-f -`: standard input), as llama.cpp's tools take a
// prompt; a file has no 128 KiB argument limit, but one of app::kPromptFileMax (128 MiB). Both
// given is a UsageError; neither gives nullopt. A file that cannot be read (past the limit, or a
// device or directory) throws app::InputError, a std::runtime_error, with the reason.
std::optional<std::string> prompt_text(const Options& options);

// The sampler options every generating command takes (--temp, --top-k, --top-p, --min-p,
// --repeat-penalty, --repeat-last-n, --presence-penalty, --frequency-penalty, --seed), with
// their defaults where absent; a value out of range is a UsageError.
SamplerParams sampler_params(const Options& options);

// --cache-type auto|f16|f32|q8_0 (the KV cache's element type; absent: auto); another value is a
// UsageError.
KvCacheType cache_type(const Options& options);

// Runs a command body, turning UsageError into exit code 2 with the usage text on stderr, and
// HelpRequested into exit code 0 with it on stdout.
int with_usage(const char* usage, int (*body)(const Args&), const Args& args);

}  // namespace vkllm::cli
