#include "server_connection.h"

#include <cstdlib>
#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

namespace vkllm::cli::server {
namespace {

// An endpoint's numeric address and port as cpp-httplib writes them (getnameinfo).
bool endpoint(const sockaddr_storage& addr, socklen_t len, std::string& host, int& port) {
    char h[NI_MAXHOST], s[NI_MAXSERV];
    if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, h, sizeof h, s, sizeof s,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        return false;
    host = h;
    port = std::atoi(s);
    return true;
}

}  // namespace

int find_connection_socket(int local_port, const std::string& remote_addr, int remote_port) {
    DIR* dir = opendir("/proc/self/fd");
    if (!dir) return -1;
    int found = -1;
    while (dirent* e = readdir(dir)) {
        char* end = nullptr;
        const long fd = std::strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end) continue;
        struct stat st;
        if (fstat(int(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
        sockaddr_storage local{}, peer{};
        socklen_t local_len = sizeof local, peer_len = sizeof peer;
        if (getsockname(int(fd), reinterpret_cast<sockaddr*>(&local), &local_len) != 0) continue;
        if (getpeername(int(fd), reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) continue;
        std::string local_host, peer_host;
        int lport = -1, pport = -1;
        if (!endpoint(local, local_len, local_host, lport) || !endpoint(peer, peer_len, peer_host, pport)) continue;
        if (lport == local_port && pport == remote_port && peer_host == remote_addr) {
            found = int(fd);
            break;
        }
    }
    closedir(dir);
    return found;
}

bool peer_closed(int fd) {
    if (fd < 0) return false;
    pollfd p{fd, short(POLLIN | POLLRDHUP), 0};
    if (poll(&p, 1, 0) <= 0) return false;
    // POLLIN alone is a next request on a kept-alive connection: still open.
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace vkllm::cli::server
