// The one rule for files a command writes (docs/architecture.md, "Output files"): the bytes go
// to a temporary file in the target's folder, every write and the close are checked, and the
// temporary is renamed over the target only when all of it succeeded. On any failure the
// temporary is removed, so the target is either the complete new file or exactly what it was.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

namespace vkllm::cli {

class OutputFile {
public:
    // Creates the temporary file at once, so a folder that does not exist or cannot be written
    // is reported before any work is done. Throws std::runtime_error naming `path` and the reason.
    explicit OutputFile(std::string path);
    ~OutputFile();  // removes the temporary when commit() was not reached
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    void write(const void* data, size_t bytes);  // throws with the reason (e.g. "No space left on device")
    void write(const std::string& text) { write(text.data(), text.size()); }
    void commit();  // flush, close, rename over the target; throws on failure (the target is untouched)

    const std::string& path() const { return path_; }

private:
    [[noreturn]] void fail(const std::string& what, int error);
    std::string path_;
    std::string temp_;
    FILE* file_ = nullptr;
};

// `text` written to `path` by the rule above.
void write_output_file(const std::string& path, const std::string& text);

}  // namespace vkllm::cli
