// `vkllm serve`'s side of OpenAI's API: reading a request body into what the engine runs, and
// the JSON shapes of answers and errors. No HTTP here (cmd_serve.cpp has it).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkllm/chat_template.h"
#include "vkllm/generate.h"

namespace vkllm::cli::server {

// A request the server refuses: the HTTP status and OpenAI's error object
// {"error": {"message", "type", "param", "code"}}.
struct ApiError : std::runtime_error {
    ApiError(int status, const std::string& message, const std::string& param = "", const std::string& code = "",
             const std::string& type = "invalid_request_error")
        : std::runtime_error(message), status(status), type(type), param(param), code(code) {}
    int status;
    std::string type, param, code;
};
nlohmann::json error_body(const ApiError& e);

enum class Endpoint { Chat, Completion };  // /v1/chat/completions, /v1/completions

struct CompletionRequest {
    Endpoint endpoint = Endpoint::Chat;
    std::string model;                   // empty: not given
    std::vector<ChatMessage> messages;   // Chat
    std::string prompt;                  // Completion, as text
    std::vector<int32_t> prompt_tokens;  // Completion, as token ids (prompt_is_tokens)
    bool prompt_is_tokens = false;
    GenerateOptions options;             // max_tokens is -1 when the request leaves it open
    bool stream = false;
    bool include_usage = false;          // stream_options.include_usage
};

// Reads a request body. Throws ApiError (400) for text that is not JSON, a field of the wrong
// type or out of its range, missing messages or prompt. Fields it does not know are ignored.
// Sampling defaults are the engine's (SamplerParams); `seed` when not given.
CompletionRequest parse_request(Endpoint endpoint, const std::string& body, uint64_t seed);

// OpenAI's finish_reason for how a generation ended: "stop" (end of generation, a stop string)
// or "length" (max_tokens, the context full).
const char* finish_reason(StopReason reason);

// What every answer of one request shares.
struct ResponseHeader {
    Endpoint endpoint = Endpoint::Chat;
    std::string id;     // "chatcmpl-..." / "cmpl-..."
    int64_t created = 0;
    std::string model;
};
nlohmann::json usage_json(int prompt_tokens, int completion_tokens);
// The whole answer (stream: false).
nlohmann::json completion_json(const ResponseHeader& h, const std::string& text, const char* finish,
                               int prompt_tokens, int completion_tokens);
// One server-sent event's object (stream: true): `text` with finish == nullptr; the last one
// has finish set (and no text). role_only: the chat's first chunk ({"role": "assistant"}).
nlohmann::json chunk_json(const ResponseHeader& h, const std::string& text, const char* finish, bool role_only = false);
// The usage chunk that ends a stream when stream_options.include_usage: no choices.
nlohmann::json usage_chunk_json(const ResponseHeader& h, int prompt_tokens, int completion_tokens);

}  // namespace vkllm::cli::server
