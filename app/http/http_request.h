// HTTP/1.1 requests from a byte stream, with limits: the part of the server that reads what a
// client sends, kept apart from sockets so that tests and the fuzzer can drive it with bytes.
// Boost.Beast's parser (Debian's libboost-dev, header-only) does the parsing: request line,
// header fields, Content-Length and chunked bodies. This file adds the limits and the answers
// a server owes a client that breaks them.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vkllm::http {

// What one request may hold. Past a limit the request is refused with a status: 431 for the
// header fields (their bytes or their number), 413 for the body.
struct Limits {
    size_t max_header_bytes = 32 << 10;  // request line and header fields together
    size_t max_header_count = 100;
    size_t max_body_bytes = 8 << 20;
};

struct Request {
    std::string method;  // as sent: "GET", "POST", ...
    std::string target;  // as sent: "/v1/models?x=1"
    std::string path;    // the target up to '?'
    int version = 11;    // 10 or 11
    std::vector<std::pair<std::string, std::string>> headers;  // in order, names as sent
    std::string body;    // after any chunked transfer coding
    bool keep_alive = true;

    // The first header field of that name (case-insensitive), or "" when there is none.
    std::string_view header(std::string_view name) const;
};

// A request the server refuses before it reaches a handler: the status, and why in words.
struct Refusal {
    int status = 400;
    std::string message;
};

// Reads consecutive requests out of the bytes of one connection (HTTP/1.1 keep-alive and
// pipelining: the bytes after one request are the start of the next).
class RequestReader {
public:
    explicit RequestReader(Limits limits = {});
    ~RequestReader();
    RequestReader(const RequestReader&) = delete;
    RequestReader& operator=(const RequestReader&) = delete;

    enum class State {
        NeedMore,  // no whole request yet
        Ready,     // take() returns the next request
        Refused,   // the bytes break HTTP or a limit: answer refusal() and close the connection
    };

    // Adds bytes from the client.
    void feed(std::string_view bytes);
    // Parses what has been fed. After Ready, take() the request before calling next() again.
    State next();
    Request take();
    const Refusal& refusal() const { return refusal_; }

    // True once per request whose header asks "Expect: 100-continue" and whose body has not
    // arrived yet: the server should send "100 Continue" then.
    bool take_continue();
    // Some bytes of a request have arrived and it is not whole yet.
    bool mid_request() const;
    // Bytes held that were not yet parsed into a request.
    size_t buffered() const { return buffer_.size(); }

private:
    struct Parser;
    State refuse(int status, std::string message);
    void start_parser();

    Limits limits_;
    std::string buffer_;  // fed, not yet consumed by the parser
    std::unique_ptr<Parser> parser_;
    Refusal refusal_;
    bool continue_sent_ = false, header_checked_ = false, ready_ = false, refused_ = false;
};

// The reason phrase of a status ("OK", "Not Found", ...).
const char* reason_phrase(int status);

}  // namespace vkllm::http
