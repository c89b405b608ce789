// Whether the client of a request is still there. cpp-httplib 0.11 (Debian 12's) does not give
// a handler its connection's socket, so it is found among the process's descriptors by the
// request's two endpoints, and polled for the peer's close while the answer is generated.
#pragma once

#include <string>

namespace vkllm::cli::server {

// The descriptor of the TCP connection from remote_addr:remote_port to local port
// `local_port`, or -1 when there is none. The descriptor stays valid while the request's
// handler runs (cpp-httplib closes it afterwards).
int find_connection_socket(int local_port, const std::string& remote_addr, int remote_port);

// True when the peer has closed the connection (or it broke); false while it is open.
bool peer_closed(int fd);

}  // namespace vkllm::cli::server
