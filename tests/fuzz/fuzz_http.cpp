// libFuzzer target: the HTTP request path of `vkllm serve` without a socket or a model: bytes
// from a client (cut into reads of fuzzer-chosen sizes) through the request reader (app/http),
// each request's body through the OpenAI request parser (app/cli/server_api.cpp), and the
// answer or error written as JSON text.
//
// Input layout: the first byte seeds the sizes of the reads; the rest is what the client sends.
//
// Checked: the reader either waits, gives a request or refuses with a 4xx/5xx status and a
// message, never holds more than its header limit plus one read, and stays refused once
// refused; the body parser either gives a request or throws ApiError (a 4xx); every JSON text
// written is valid UTF-8 (it parses back). Any other exception, a crash, a sanitizer report, a
// hang (-timeout) or a blown memory limit stops the run.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "http_request.h"
#include "json_text.h"
#include "server_api.h"

namespace {

using vkllm::http::RequestReader;
namespace server = vkllm::cli::server;

void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "fuzz_http: %s\n", what);
        std::abort();
    }
}

// The JSON text must parse back: valid UTF-8 and valid JSON.
void check_json_text(const nlohmann::json& value) {
    const std::string text = vkllm::app::json_text(value);
    check(nlohmann::json::accept(text), "a JSON text that does not parse back");
}

void handle(const vkllm::http::Request& r) {
    server::Endpoint endpoint;
    if (r.path == "/v1/chat/completions")
        endpoint = server::Endpoint::Chat;
    else if (r.path == "/v1/completions")
        endpoint = server::Endpoint::Completion;
    else
        return;
    try {
        const server::CompletionRequest request = server::parse_request(endpoint, r.body, 42);
        server::ResponseHeader head{endpoint, "cmpl-1", 0, request.model};
        // The answer echoes the request's text, as a model's output could: bytes of any kind.
        const std::string text = request.prompt + (request.messages.empty() ? "" : request.messages[0].content) + r.body;
        check_json_text(server::completion_json(head, text, "stop", 1, 1));
        check_json_text(server::chunk_json(head, text, nullptr));
    } catch (const server::ApiError& e) {
        check(e.status >= 400 && e.status < 500, "an ApiError that is not a 4xx");
        check_json_text(server::error_body(e));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    uint32_t seed = data[0] * 2654435761u + 1;
    std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
    vkllm::http::Limits limits;
    limits.max_header_bytes = 2048;  // small, so that the fuzzer reaches the limits
    limits.max_header_count = 16;
    limits.max_body_bytes = 4096;
    RequestReader reader(limits);
    bool refused = false;
    while (!bytes.empty()) {
        seed = seed * 1103515245u + 12345u;
        const size_t n = std::min<size_t>(bytes.size(), 1 + (seed >> 16) % 64);
        reader.feed(bytes.substr(0, n));
        bytes.remove_prefix(n);
        for (;;) {
            const RequestReader::State state = reader.next();
            if (state == RequestReader::State::NeedMore) break;
            if (state == RequestReader::State::Refused) {
                const int status = reader.refusal().status;
                check(status >= 400 && status < 600, "a refusal without an error status");
                check(!reader.refusal().message.empty(), "a refusal without a message");
                refused = true;
                break;
            }
            check(!refused, "a request after a refusal");
            handle(reader.take());
        }
        if (refused) break;
        check(reader.buffered() <= limits.max_header_bytes + limits.max_body_bytes + 64, "the reader holds too much");
    }
    return 0;
}
