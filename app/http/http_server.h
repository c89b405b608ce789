// A small HTTP/1.1 server for `vkllm serve`: one thread per connection, up to a cap, each
// reading its requests with deadlines and answering them in order (keep-alive and pipelining).
// A client can slow only its own connection: headers and body must arrive within a deadline
// from their first byte, an idle kept-alive connection is closed, a response that the client
// stops reading is abandoned, and past the connection cap a new client is answered 503 at once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http_request.h"

namespace vkllm::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

// What ServerOptions::log receives once per answered request.
struct LogEntry {
    std::string method, path;  // "-" for a request refused before it was read whole
    int status = 0;
    double seconds = 0;        // from the request's first byte to the end of its answer
    std::string note;          // what the handler added (Responder::note): tokens, ...
};

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 8080;  // 0: any free port (Server::port() tells which)
    Limits limits;
    size_t max_connections = 256;
    std::chrono::milliseconds request_timeout{30'000};  // a request's first byte to its last
    std::chrono::milliseconds idle_timeout{30'000};     // a kept-alive connection between requests
    std::chrono::milliseconds send_timeout{30'000};     // a response write that makes no progress
    // The body of a refusal the server makes itself (400, 408, 411, 413, 431, 503, 505, 500):
    // its content type and text. Default: text/plain, the message.
    std::function<std::pair<std::string, std::string>(int status, const std::string& message)> error_body;
    // Called after each answered request; may be empty.
    std::function<void(const LogEntry&)> log;
};

// How a handler answers one request: either send() once, or begin_stream(), write() pieces
// and end_stream(). A handler that returns without answering gets a 500.
class Responder {
public:
    Responder(int fd, int version, bool keep_alive, std::chrono::milliseconds send_timeout);

    void send(int status, std::string_view content_type, std::string_view body, const Headers& extra = {});
    // Starts a response whose body comes in pieces (chunked for HTTP/1.1, closed-delimited for
    // 1.0). False when the client is gone.
    bool begin_stream(int status, std::string_view content_type, const Headers& extra = {});
    bool write(std::string_view piece);  // false: the client is gone or stopped reading
    void end_stream();

    // True when the client has closed its end of the connection (or it broke). Reads nothing.
    bool client_gone() const;

    // Ends the connection after this request without finishing the answer.
    void abandon() { broken_ = true; }

    bool answered() const { return status_ != 0; }
    // Words the handler adds to this request's log line (tokens, timings).
    std::string note;
    int status() const { return status_; }
    bool keep_alive() const { return keep_alive_ && !broken_; }

private:
    bool send_all(std::string_view bytes);
    std::string head(int status, std::string_view content_type, const Headers& extra, const std::string& length_field);

    int fd_;
    int version_;
    bool keep_alive_;
    std::chrono::milliseconds send_timeout_;
    int status_ = 0;
    bool streaming_ = false, broken_ = false;
};

using Handler = std::function<void(const Request&, Responder&)>;

class Server {
public:
    Server(ServerOptions options, Handler handler);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    // Binds and listens; returns the port. Throws std::runtime_error when it cannot.
    int listen();
    // Accepts connections until stop(); returns when every connection has ended.
    void run();
    // Stops accepting, wakes and ends every connection between requests. A handler in progress
    // finishes (its caller stops it first: the worker cancels its jobs). Any thread may call it.
    void stop();

    size_t connections() const;

private:
    void serve_connection(int fd);
    void refuse_connection(int fd);
    std::pair<std::string, std::string> refusal_body(int status, const std::string& message) const;

    ServerOptions options_;
    Handler handler_;
    int listen_fd_ = -1;
    int wake_fd_ = -1;  // an eventfd: readable once stop() was called
    std::atomic<bool> stopping_{false};
    mutable std::mutex mutex_;
    std::condition_variable ended_;
    std::set<int> open_;  // connection descriptors being served
};

}  // namespace vkllm::http
