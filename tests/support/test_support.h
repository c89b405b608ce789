// Helpers shared by the test programs: seeded random data, error metrics, test-data paths.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vkllm::test {

// Uniform floats in [lo, hi) from a fixed seed.
std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f);

// Normalized mean squared error: sum((a-b)^2) / sum(b^2), b the reference.
double nmse(const std::vector<float>& got, const std::vector<float>& ref);
double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b);

// A path for a scratch file private to this test process: tests run in parallel (each GPU test
// program twice at once), so shared names would race.
std::string temp_path(const std::string& name);
// Writes `bytes` to temp_path(name) and returns that path.
std::string write_temp_file(const std::string& name, const std::string& bytes);

// ../shared beside the source tree (VKLLM_SHARED_DIR), or nullopt when it is absent.
std::optional<std::string> shared_dir();
// The source tree (VKLLM_SOURCE_DIR).
std::string source_dir();
// True where a file of the source tree named by `relative` is missing because the tree is a
// device call's slim one (VKLLM_SLIM_TREE=1: scripts/gpu-slim-branch.sh leaves out the paths of
// scripts/lib/gpu-slim-paths.txt): the case that reads it skips, saying so. Anywhere else a
// missing file stays the failure it is.
bool left_out_of_slim_tree(const std::string& relative);

std::vector<uint8_t> read_file(const std::string& path);
// Whitespace-separated integers (token ids) and raw float32 arrays (logits) of golden files.
std::vector<int32_t> read_ids(const std::string& path);
std::vector<float> read_f32(const std::string& path);
// The non-empty lines of a text file (golden prompts).
std::vector<std::string> read_lines(const std::string& path);

// Sets an environment variable for one scope (limits the ops read, such as VKLLM_MAX_BINDING_BYTES).
class ScopedEnv {
public:
    ScopedEnv(const char* name, const std::string& value);
    ~ScopedEnv();
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* name_;
    std::optional<std::string> old_;
};

// The exit code and standard output of a shell command (popen): what CLI tests run.
struct ShellResult {
    int code = -1;    // exit status; -1 when the command did not exit normally
    std::string out;  // standard output (add 2>&1 to the command for stderr too)
};
ShellResult shell(const std::string& command);
// The vkllm binary under test: $VKLLM_BIN, else "vkllm" from PATH.
std::string vkllm_bin();

}  // namespace vkllm::test

// Skips the current test with a message when ../shared is missing; sets `var` to its path.
#define VKLLM_REQUIRE_SHARED(var)                                                    \
    auto var##_opt = ::vkllm::test::shared_dir();                                    \
    if (!var##_opt) GTEST_SKIP() << "../shared is absent: skipping (needs shared models)"; \
    const std::string var = *var##_opt
