#include "output_file.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace vkllm::cli {

namespace {

// The temporary lives beside the target (rename is atomic only within one file system) and
// carries the process id, so two runs writing the same target do not share one.
std::string temp_name(const std::string& path) {
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    return dir + "." + base + ".tmp." + std::to_string(getpid());
}

}  // namespace

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
    if (path_.empty()) throw std::runtime_error("the output file name is empty");
    struct stat st{};
    if (stat(path_.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        throw std::runtime_error("cannot write " + path_ + ": it is a directory");
    // A device or a pipe (/dev/null, /dev/stdout, a FIFO) is written in place: there is no file
    // to replace, and renaming over it would replace the device itself.
    const bool special = stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
    if (!special) temp_ = temp_name(path_);
    file_ = std::fopen(special ? path_.c_str() : temp_.c_str(), "wb");
    if (!file_) {
        const int error = errno;
        throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(error));
    }
}

OutputFile::~OutputFile() {
    if (file_) std::fclose(file_);
    if (!temp_.empty()) std::remove(temp_.c_str());
}

void OutputFile::fail(const std::string& what, int error) {
    if (file_) std::fclose(file_);
    file_ = nullptr;
    const bool replaced_nothing = !temp_.empty();
    if (replaced_nothing) std::remove(temp_.c_str());
    temp_.clear();
    throw std::runtime_error(what + " " + path_ + " failed: " + std::strerror(error) +
                             (replaced_nothing ? " (" + path_ + " was left as it was)" : std::string()));
}

void OutputFile::write(const void* data, size_t bytes) {
    if (!file_) throw std::logic_error("OutputFile::write after commit or failure");
    errno = 0;
    if (std::fwrite(data, 1, bytes, file_) != bytes) fail("writing", errno ? errno : EIO);
}

void OutputFile::commit() {
    if (!file_) throw std::logic_error("OutputFile::commit twice or after a failure");
    errno = 0;
    if (std::fflush(file_) != 0 || std::ferror(file_)) fail("writing", errno ? errno : EIO);
    if (!temp_.empty() && fsync(fileno(file_)) != 0) fail("writing", errno);
    FILE* f = file_;
    file_ = nullptr;
    if (std::fclose(f) != 0) fail("closing", errno ? errno : EIO);
    if (!temp_.empty() && std::rename(temp_.c_str(), path_.c_str()) != 0) fail("renaming the new file over", errno);
    temp_.clear();
}

void write_output_file(const std::string& path, const std::string& text) {
    OutputFile out(path);
    out.write(text);
    out.commit();
}

}  // namespace vkllm::cli
