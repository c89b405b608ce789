#include "input_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace vkllm::app {
namespace {

// What a file of this mode is, for a message; nullptr for the kinds that may be read.
const char* refused_kind(const struct stat& st, int fd) {
    if (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) return nullptr;
    if (S_ISDIR(st.st_mode)) return "a directory";
    if (S_ISCHR(st.st_mode)) return isatty(fd) ? nullptr : "a character device";
    if (S_ISBLK(st.st_mode)) return "a block device";
    return "not a regular file";
}

// Closes the descriptor it opened (never standard input).
struct Fd {
    int fd = -1;
    bool owned = false;
    ~Fd() {
        if (owned && fd >= 0) ::close(fd);
    }
};

}  // namespace

std::string byte_size_text(uint64_t bytes) {
    static const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
    double v = double(bytes) / 1024;
    int u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        ++u;
    }
    char text[32];
    if (v == double(uint64_t(v))) std::snprintf(text, sizeof text, "%llu %s", static_cast<unsigned long long>(v), units[u]);
    else std::snprintf(text, sizeof text, "%.1f %s", v, units[u]);
    return text;
}

std::string read_input(const std::string& path, uint64_t max_bytes, const std::string& what) {
    const bool standard_input = path == "-";
    const std::string subject = standard_input ? what + " from standard input" : what + " " + path;
    if (path.empty()) throw InputError("no " + what + " named (an empty path)");
    const std::string limit = "the limit for a " + what + " is " + byte_size_text(max_bytes);

    Fd in;
    if (standard_input) {
        in.fd = STDIN_FILENO;
    } else {
        // A FIFO blocks here until a writer opens it, as `cat FIFO` does; Ctrl-C ends the wait.
        in.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (in.fd < 0) throw InputError("cannot read " + subject + ": " + std::strerror(errno));
        in.owned = true;
    }
    struct stat st = {};
    if (::fstat(in.fd, &st) != 0) throw InputError("cannot read " + subject + ": " + std::strerror(errno));
    if (const char* kind = refused_kind(st, in.fd))
        throw InputError("cannot read " + subject + ": it is " + kind +
                         ", not a regular file or a pipe");
    if (S_ISREG(st.st_mode) && uint64_t(st.st_size) > max_bytes)
        throw InputError("cannot read " + subject + ": it has " + byte_size_text(uint64_t(st.st_size)) + " (" +
                         std::to_string(st.st_size) + " bytes); " + limit);

    std::string text;
    if (S_ISREG(st.st_mode)) text.reserve(size_t(st.st_size));
    char buffer[65536];
    while (true) {
        const ssize_t n = ::read(in.fd, buffer, sizeof buffer);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) throw InputError("reading " + subject + " was interrupted");
            throw InputError("cannot read " + subject + ": " + std::strerror(errno));
        }
        if (uint64_t(n) > max_bytes - text.size())
            throw InputError("cannot read " + subject + ": it goes on past " + byte_size_text(max_bytes) + "; " + limit);
        text.append(buffer, size_t(n));
    }
    return text;
}

}  // namespace vkllm::app
