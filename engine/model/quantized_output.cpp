#include "model/quantized_output.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <unistd.h>

namespace vkllm::model {
namespace {

namespace fs = std::filesystem;

// A name beside `target` that nothing else uses: ".NAME.tmp-PID-N".
fs::path temporary_beside(const fs::path& target) {
    static std::atomic<unsigned> counter{0};
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    for (;;) {
        fs::path p = dir / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                            std::to_string(counter++));
        std::error_code ec;
        if (!fs::exists(fs::symlink_status(p, ec))) return p;
    }
}

}  // namespace

void check_quantize_output(const std::string& in_path, const std::string& out_path) {
    if (out_path.empty()) throw std::invalid_argument("quantize: no output path given");
    std::error_code ec;
    if (fs::exists(in_path, ec) && fs::exists(out_path, ec) && fs::equivalent(in_path, out_path, ec))
        throw std::runtime_error("refusing to overwrite the input file '" + in_path + "'; choose another output path");
    const fs::file_status st = fs::status(out_path, ec);
    if (fs::exists(st) && !fs::is_regular_file(st))
        throw std::runtime_error(out_path + ": exists and is not a regular file; choose another output path");
}

void write_quantized(const gguf::Writer& writer, const std::string& out_path) {
    const fs::path tmp = temporary_beside(out_path);
    std::error_code ec;
    try {
        writer.write(tmp.string());
    } catch (const std::exception& e) {
        fs::remove(tmp, ec);
        throw std::runtime_error(out_path + ": cannot write the quantized file: " + e.what());
    }
    if (std::rename(tmp.c_str(), out_path.c_str()) != 0) {
        const std::string why = std::strerror(errno);
        fs::remove(tmp, ec);
        throw std::runtime_error(out_path + ": cannot replace it with the quantized file: " + why);
    }
}

}  // namespace vkllm::model
