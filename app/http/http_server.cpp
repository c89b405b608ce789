#include "http_server.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

namespace vkllm::http {
namespace {

using Clock = std::chrono::steady_clock;

// Milliseconds from now until `deadline` for poll(), at least 0.
int ms_until(Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left <= 0 ? 0 : left > 1'000'000 ? 1'000'000 : int(left);
}

// Refused connections that are still being answered, beyond the connection cap: a few may linger
// to deliver their 503; past this many a connection is closed without a word.
constexpr int kMaxRefusing = 32;

// After a refusal the client may still be sending (a body too large, a header too long): its
// bytes are read and dropped for a moment before the socket closes, so that the close does not
// reset the connection before the client has read the answer.
void lingering_close(int fd) {
    shutdown(fd, SHUT_WR);
    const auto until = Clock::now() + std::chrono::seconds(2);
    char sink[16384];
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, ms_until(until)) <= 0) break;
        const ssize_t n = recv(fd, sink, sizeof sink, 0);
        if (n <= 0) break;
    }
    close(fd);
}

}  // namespace

// --- Responder ---------------------------------------------------------------------------

Responder::Responder(int fd, int version, bool keep_alive, std::chrono::milliseconds send_timeout)
    : fd_(fd), version_(version), keep_alive_(keep_alive), send_timeout_(send_timeout) {}

bool Responder::send_all(std::string_view bytes) {
    while (!broken_ && !bytes.empty()) {
        const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            bytes.remove_prefix(size_t(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            // The client is not reading: wait for room, at most send_timeout without progress.
            pollfd p{fd_, POLLOUT, 0};
            if (poll(&p, 1, int(send_timeout_.count())) > 0 && !(p.revents & (POLLERR | POLLHUP | POLLNVAL))) continue;
        }
        broken_ = true;
    }
    return !broken_;
}

std::string Responder::head(int status, std::string_view content_type, const Headers& extra,
                            const std::string& length_field) {
    std::string h = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
    if (!content_type.empty()) h.append("Content-Type: ").append(content_type).append("\r\n");
    for (const auto& [name, value] : extra) h.append(name).append(": ").append(value).append("\r\n");
    h += length_field;
    h += keep_alive_ ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
    return h;
}

void Responder::send(int status, std::string_view content_type, std::string_view body, const Headers& extra) {
    if (status_ != 0) return;  // answered already
    status_ = status;
    std::string message = head(status, content_type, extra, "Content-Length: " + std::to_string(body.size()) + "\r\n");
    message.append(body);
    send_all(message);
}

bool Responder::begin_stream(int status, std::string_view content_type, const Headers& extra) {
    if (status_ != 0) return false;
    status_ = status;
    streaming_ = true;
    // HTTP/1.0 has no chunked coding: the body ends where the connection does.
    if (version_ < 11) keep_alive_ = false;
    return send_all(head(status, content_type, extra, version_ < 11 ? "" : "Transfer-Encoding: chunked\r\n"));
}

bool Responder::write(std::string_view piece) {
    if (!streaming_ || broken_) return false;
    if (piece.empty()) return true;  // an empty chunk would end the body
    if (version_ < 11) return send_all(piece);
    char size[32];
    const int n = std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
    std::string chunk(size, size_t(n));
    chunk.append(piece).append("\r\n");
    return send_all(chunk);
}

void Responder::end_stream() {
    if (!streaming_) return;
    streaming_ = false;
    if (version_ >= 11) send_all("0\r\n\r\n");
}

bool Responder::client_gone() const {
    if (broken_) return true;
    pollfd p{fd_, short(POLLIN | POLLRDHUP), 0};
    if (poll(&p, 1, 0) <= 0) return false;
    // POLLIN alone is the next request of a pipelining client: still there.
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

// --- Server ------------------------------------------------------------------------------

Server::Server(ServerOptions options, Handler handler) : options_(std::move(options)), handler_(std::move(handler)) {
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
}

Server::~Server() {
    stop();
    std::unique_lock lock(mutex_);
    ended_.wait(lock, [&] { return open_.empty(); });
    lock.unlock();
    if (listen_fd_ >= 0) close(listen_fd_);
    close(wake_fd_);
}

int Server::listen() {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(options_.port);
    const int rc = getaddrinfo(options_.host.c_str(), port.c_str(), &hints, &found);
    if (rc != 0) throw std::runtime_error("cannot listen on " + options_.host + ":" + port + ": " + gai_strerror(rc));
    std::string why = "no address";
    for (addrinfo* a = found; a && listen_fd_ < 0; a = a->ai_next) {
        const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        const int yes = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
            listen_fd_ = fd;
        } else {
            why = std::strerror(errno);
            close(fd);
        }
    }
    freeaddrinfo(found);
    if (listen_fd_ < 0) throw std::runtime_error("cannot listen on " + options_.host + ":" + port + ": " + why);
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
    return bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                       : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

void Server::stop() {
    if (stopping_.exchange(true)) return;
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

size_t Server::connections() const {
    std::lock_guard lock(mutex_);
    return open_.size();
}

std::pair<std::string, std::string> Server::refusal_body(int status, const std::string& message) const {
    if (options_.error_body) return options_.error_body(status, message);
    return {"text/plain; charset=utf-8", message + "\n"};
}

void Server::run() {
    if (listen_fd_ < 0) throw std::logic_error("Server::run before listen");
    auto refusing = std::make_shared<std::atomic<int>>(0);  // connections being refused now
    while (!stopping_.load()) {
        pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (p[1].revents) break;
        if (!(p[0].revents & POLLIN)) continue;
        const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;  // the client gave up already, or descriptors ran out: go on
        const int yes = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
        std::unique_lock lock(mutex_);
        const bool full = open_.size() >= options_.max_connections;
        if (full && refusing->load() >= kMaxRefusing) {
            lock.unlock();
            close(fd);
            continue;
        }
        open_.insert(fd);
        lock.unlock();
        if (full) refusing->fetch_add(1);
        std::thread([this, fd, full, refusing] {
            if (full)
                refuse_connection(fd);
            else
                serve_connection(fd);
            if (full) refusing->fetch_sub(1);
            std::lock_guard guard(mutex_);
            open_.erase(fd);
            ended_.notify_all();
        }).detach();
    }
    stop();
    std::unique_lock lock(mutex_);
    ended_.wait(lock, [&] { return open_.empty(); });
}

void Server::refuse_connection(int fd) {
    const auto [type, body] = refusal_body(503, "the server has " + std::to_string(options_.max_connections) +
                                                    " connections open; try again shortly");
    Responder res(fd, 11, false, std::chrono::milliseconds(1000));
    res.send(503, type, body, {{"Retry-After", "1"}});
    if (options_.log) options_.log(LogEntry{"-", "-", 503, 0.0, ""});
    lingering_close(fd);
}

void Server::serve_connection(int fd) {
    RequestReader reader(options_.limits);
    std::vector<char> buffer(64 << 10);
    auto idle_since = Clock::now(), request_since = idle_since;
    bool in_request = false;
    auto refuse = [&](int status, const std::string& message) {
        const auto [type, body] = refusal_body(status, message);
        Responder res(fd, 11, false, options_.send_timeout);
        res.send(status, type, body);
        if (options_.log)
            options_.log(LogEntry{"-", "-", status,
                                  in_request ? std::chrono::duration<double>(Clock::now() - request_since).count() : 0.0,
                                  ""});
        lingering_close(fd);
    };
    while (!stopping_.load()) {
        RequestReader::State state = reader.next();
        while (state == RequestReader::State::NeedMore) {
            if (reader.take_continue()) {
                static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
                if (::send(fd, kContinue.data(), kContinue.size(), MSG_NOSIGNAL) < 0) return (void)close(fd);
            }
            if (!in_request && reader.mid_request()) {
                in_request = true;
                request_since = Clock::now();
            }
            const auto deadline = in_request ? request_since + options_.request_timeout : idle_since + options_.idle_timeout;
            pollfd p[2] = {{fd, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
            const int ready = poll(p, 2, ms_until(deadline));
            if (ready < 0 && errno == EINTR) continue;
            if (ready < 0 || p[1].revents) return (void)close(fd);  // stopping
            if (ready == 0) {
                if (!in_request) return (void)close(fd);  // an idle connection: closed quietly
                return refuse(408, "the request did not arrive within " +
                                       std::to_string(options_.request_timeout.count() / 1000.0).substr(0, 4) + " s");
            }
            const ssize_t n = recv(fd, buffer.data(), buffer.size(), 0);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return (void)close(fd);  // the client is gone (a partial request is dropped)
            if (!in_request) {
                in_request = true;
                request_since = Clock::now();
            }
            reader.feed(std::string_view(buffer.data(), size_t(n)));
            state = reader.next();
        }
        if (state == RequestReader::State::Refused) return refuse(reader.refusal().status, reader.refusal().message);

        const Request request = reader.take();
        in_request = false;
        Responder res(fd, request.version, request.keep_alive && !stopping_.load(), options_.send_timeout);
        try {
            handler_(request, res);
        } catch (const std::exception& e) {
            // Before the answer began: a 500. After: the connection ends without the body's
            // end, so that the client sees the answer was cut.
            const bool began = res.answered();
            const auto [type, body] = refusal_body(500, e.what());
            res.send(500, type, body);
            if (began) res.abandon();
        }
        if (!res.answered()) {
            const auto [type, body] = refusal_body(500, "the request was not answered");
            res.send(500, type, body);
        }
        if (options_.log)
            options_.log(LogEntry{request.method, request.path, res.status(),
                                  std::chrono::duration<double>(Clock::now() - request_since).count(), res.note});
        if (!res.keep_alive()) {
            shutdown(fd, SHUT_WR);
            close(fd);
            return;
        }
        idle_since = Clock::now();
    }
    close(fd);
}

}  // namespace vkllm::http
