#include "test_support.h"

#include <sys/wait.h>

#include <cmath>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>

#include <unistd.h>

namespace vkllm::test {

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

double nmse(const std::vector<float>& got, const std::vector<float>& ref) {
    if (got.size() != ref.size()) return INFINITY;
    double err = 0, norm = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        double d = double(got[i]) - double(ref[i]);
        if (std::isnan(got[i])) return INFINITY;
        err += d * d;
        norm += double(ref[i]) * double(ref[i]);
    }
    return norm > 0 ? err / norm : err;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return INFINITY;
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        double d = std::fabs(double(a[i]) - double(b[i]));
        if (std::isnan(d)) return INFINITY;
        m = std::max(m, d);
    }
    return m;
}

std::string write_temp_file(const std::string& name, const std::string& bytes) {
    const std::string path = temp_path(name);
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
}

std::optional<std::string> shared_dir() {
    const char* env = std::getenv("VKLLM_SHARED_DIR");
    std::string dir = env ? env : source_dir() + "/../shared";
    if (std::filesystem::is_directory(dir + "/models")) return std::filesystem::canonical(dir).string();
    return std::nullopt;
}

std::string temp_path(const std::string& name) {
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/vkllm-test-" + std::to_string(::getpid());
    // The folder is this test process's own and goes away with it.
    struct RemoveAtExit {
        std::string dir;
        ~RemoveAtExit() {
            std::error_code ec;
            std::filesystem::remove_all(dir, ec);
        }
    };
    static RemoveAtExit cleanup{dir};
    std::filesystem::create_directories(dir);
    return dir + "/" + name;
}

std::string source_dir() {
    const char* env = std::getenv("VKLLM_SOURCE_DIR");
    return env ? env : ".";
}

bool left_out_of_slim_tree(const std::string& relative) {
    const char* slim = std::getenv("VKLLM_SLIM_TREE");
    return slim && std::string(slim) == "1" && !std::filesystem::exists(source_dir() + "/" + relative);
}

std::vector<uint8_t> read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot open " + path);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::vector<int32_t> read_ids(const std::string& path) {
    std::ifstream f(path);
    if (!f) throw std::runtime_error("cannot open " + path);
    std::vector<int32_t> ids;
    for (int32_t id; f >> id;) ids.push_back(id);
    return ids;
}

std::vector<std::string> read_lines(const std::string& path) {
    std::ifstream f(path);
    if (!f) throw std::runtime_error("cannot open " + path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(f, line);)
        if (!line.empty()) lines.push_back(line);
    return lines;
}

std::vector<float> read_f32(const std::string& path) {
    auto bytes = read_file(path);
    std::vector<float> v(bytes.size() / 4);
    std::memcpy(v.data(), bytes.data(), v.size() * 4);
    return v;
}

ScopedEnv::ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
}

ScopedEnv::~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
}

ShellResult shell(const std::string& command) {
    ShellResult r;
    FILE* p = popen(command.c_str(), "r");
    if (!p) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

std::string vkllm_bin() {
    const char* bin = std::getenv("VKLLM_BIN");
    return bin ? bin : "vkllm";
}

}  // namespace vkllm::test
