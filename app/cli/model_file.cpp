#include "model_file.h"

#include <cstdio>

#include "embedded_model.h"

namespace vkllm::cli {

std::unique_ptr<GgufFile> open_model_file(const std::string& path) {
    if (!path.empty()) return GgufFile::open(path);
    const auto bytes = embedded_model();
    return GgufFile::from_memory(bytes.data(), bytes.size(), std::string("built-in model ") + embedded_model_name());
}

std::unique_ptr<GgufFile> open_model_file(const Options& options) {
    if (options.has("-m") && options.str("-m").empty()) throw UsageError("-m names no file");
    return open_model_file(options.str("-m"));
}

void print_warnings(const std::vector<std::string>& warnings) {
    for (const std::string& w : warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
}

std::string builtin_model_description() {
    char size[32];
    std::snprintf(size, sizeof size, "%.1f MiB", double(embedded_model().size()) / (1 << 20));
    return std::string("the built-in model ") + embedded_model_name() + " (" + size + ")";
}

}  // namespace vkllm::cli
