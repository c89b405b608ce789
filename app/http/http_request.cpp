#include "http_request.h"

#include <algorithm>
#include <cctype>
#include <iterator>

#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

namespace vkllm::http {

namespace beast_http = boost::beast::http;

struct RequestReader::Parser {
    beast_http::request_parser<beast_http::string_body> beast;
};

namespace {

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

// Methods whose requests carry a body, which then needs a length or the chunked coding.
bool has_body(std::string_view method) { return method == "POST" || method == "PUT" || method == "PATCH"; }

}  // namespace

std::string_view Request::header(std::string_view name) const {
    for (const auto& [key, value] : headers)
        if (iequals(key, name)) return value;
    return {};
}

RequestReader::RequestReader(Limits limits) : limits_(limits) { start_parser(); }

RequestReader::~RequestReader() = default;

void RequestReader::start_parser() {
    parser_ = std::make_unique<Parser>();
    parser_->beast.header_limit(std::uint32_t(std::min<size_t>(limits_.max_header_bytes, UINT32_MAX)));
    parser_->beast.body_limit(std::uint64_t(limits_.max_body_bytes));
    parser_->beast.eager(true);  // read the body in the same put() as the header when it is there
    continue_sent_ = header_checked_ = ready_ = false;
}

void RequestReader::feed(std::string_view bytes) { buffer_.append(bytes.data(), bytes.size()); }

RequestReader::State RequestReader::refuse(int status, std::string message) {
    refused_ = true;
    refusal_ = {status, std::move(message)};
    return State::Refused;
}

RequestReader::State RequestReader::next() {
    if (refused_) return State::Refused;
    if (ready_) return State::Ready;
    auto& p = parser_->beast;
    while (!buffer_.empty() && !p.is_done()) {
        boost::beast::error_code ec;
        const size_t used = p.put(boost::asio::buffer(buffer_.data(), buffer_.size()), ec);
        buffer_.erase(0, used);
        if (ec == beast_http::error::need_more) break;
        if (ec == beast_http::error::header_limit)
            return refuse(431, "the request's header is larger than " + std::to_string(limits_.max_header_bytes) + " bytes");
        if (ec == beast_http::error::body_limit)
            return refuse(413, "the request's body is larger than " + std::to_string(limits_.max_body_bytes) + " bytes");
        if (ec == beast_http::error::bad_version) return refuse(505, "only HTTP/1.0 and HTTP/1.1 are served");
        if (ec) return refuse(400, "malformed request: " + ec.message());
        if (used == 0) break;  // the parser wants more than is here
    }
    if (p.is_header_done() && !header_checked_) {
        header_checked_ = true;
        const auto& h = p.get();
        if (h.version() != 10 && h.version() != 11) return refuse(505, "only HTTP/1.0 and HTTP/1.1 are served");
        const size_t fields = size_t(std::distance(h.begin(), h.end()));
        if (fields > limits_.max_header_count)
            return refuse(431, "the request has " + std::to_string(fields) + " header fields; at most " +
                                   std::to_string(limits_.max_header_count) + " are read");
        if (has_body(std::string_view(h.method_string().data(), h.method_string().size())) && !p.chunked() &&
            !p.content_length())
            return refuse(411, "a " + std::string(h.method_string()) +
                                   " request needs a Content-Length or Transfer-Encoding: chunked");
    }
    if (!p.is_done()) return State::NeedMore;
    ready_ = true;
    return State::Ready;
}

Request RequestReader::take() {
    auto message = parser_->beast.release();
    Request r;
    r.method = std::string(message.method_string());
    r.target = std::string(message.target());
    r.path = r.target.substr(0, r.target.find('?'));
    r.version = int(message.version());
    for (const auto& field : message) r.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    r.body = std::move(message.body());
    r.keep_alive = message.keep_alive();
    start_parser();
    return r;
}

bool RequestReader::take_continue() {
    if (continue_sent_ || refused_ || ready_) return false;
    const auto& p = parser_->beast;
    if (!p.is_header_done() || p.is_done()) return false;
    const auto expect = p.get()[beast_http::field::expect];
    if (!iequals(std::string_view(expect.data(), expect.size()), "100-continue")) return false;
    continue_sent_ = true;
    return true;
}

bool RequestReader::mid_request() const {
    return !refused_ && !ready_ && (!buffer_.empty() || parser_->beast.got_some());
}

const char* reason_phrase(int status) {
    switch (status) {
        case 100: return "Continue";
        case 200: return "OK";
        case 400: return "Bad Request";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 411: return "Length Required";
        case 413: return "Payload Too Large";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 503: return "Service Unavailable";
        case 505: return "HTTP Version Not Supported";
        default: return status < 400 ? "OK" : status < 500 ? "Bad Request" : "Internal Server Error";
    }
}

}  // namespace vkllm::http
