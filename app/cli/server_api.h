// `vkllm serve`'s side of OpenAI's API: reading a request body into what the engine runs, and
// the JSON shapes of answers and errors. No HTTP here (cmd_serve.cpp has it).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkllm/chat_template.h"
#include "vkllm/generate.h"
#include "vkllm/json_output.h"
#include "vkllm/tool_calls.h"

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

// Request fields, by what the server does with them (the README's table says the same):
//  - honoured: read, checked and applied (a field of the wrong type or range is a 400);
//  - ignored: harmless to ignore, they do not change the answer (`user`, `metadata`, `store`,
//    `service_tier`, `prompt_cache_key`, `safety_identifier`, `prediction`, `parallel_tool_calls`,
//    llama-server's `cache_prompt`);
//  - refused: a 400 whose message and `param` name the field (`functions`, `audio`, `suffix`,
//    `best_of` other than `n`, ...), unless the value asks for nothing (`functions: []`, ...);
//  - `logit_bias`: token id -> bias in [-100, 100] (SamplerParams::logit_bias; -100 bans);
//  - `n`: n choices of one prompt, generated one after another; choice i samples with the
//    request's seed + i;
//  - chat's `tools` and `tool_choice` (auto, none, required or a named function): the tools go
//    to the chat template, calls are read back out of the answer (vkllm/tool_calls.h), and
//    required or named force a call by constrained sampling;
//  - chat's `response_format`: text, json_object (any JSON object) or json_schema (the values
//    its `schema` allows, by constrained sampling); a schema keyword the grammar cannot enforce
//    is a 400 naming it (vkllm/json_output.h);
//  - any other field: a 400 naming it (code "unknown_parameter"), as OpenAI answers.
struct CompletionRequest {
    Endpoint endpoint = Endpoint::Chat;
    std::string model;                   // empty: not given
    std::vector<ChatMessage> messages;   // Chat
    // Chat: the messages as the template sees them ({"role", "content"}, plus "name",
    // "tool_calls" and "tool_call_id" where given); tool_message: the first message with tool
    // calls or the tool role (a model without a template cannot render them).
    nlohmann::ordered_json messages_json = nlohmann::ordered_json::array();
    int tool_message = -1;               // the first such message's index, -1 when none
    std::string prompt;                  // Completion, as text
    std::vector<int32_t> prompt_tokens;  // Completion, as token ids (prompt_is_tokens)
    bool prompt_is_tokens = false;
    GenerateOptions options;             // max_tokens is -1 when the request leaves it open
    int n = 1;                           // choices
    bool stream = false;
    bool include_usage = false;          // stream_options.include_usage
    bool logprobs = false;               // chat: logprobs; completions: logprobs given (0..20)
    int top_logprobs = 0;                // alternatives per token (chat: top_logprobs; completions: logprobs)
    bool echo = false;                   // completions: the prompt's text before the answer
    std::optional<JsonGrammar> json;     // response_format json_object / json_schema
    // tools (a list of {"type": "function", "function": {"name", "description", "parameters"}})
    // and tool_choice; with None the tools are not shown to the model.
    nlohmann::json tools = nlohmann::json::array();
    enum class ToolChoice { Auto, None, Required, Named } tool_choice = ToolChoice::None;
    std::string tool_name;               // Named: the function
};

// The most choices (`n`) a request may ask for (OpenAI's limit).
constexpr int kMaxChoices = 128;

// Reads a request body. Throws ApiError (400) for text that is not JSON, a field of the wrong
// type or out of its range, missing messages or prompt, a refused or unknown field (see above).
// Sampling defaults are the engine's (SamplerParams); `seed` when not given.
CompletionRequest parse_request(Endpoint endpoint, const std::string& body, uint64_t seed);
// A 400 naming logit_bias when it names a token outside a vocabulary of n_vocab tokens.
void check_logit_bias(const CompletionRequest& r, int32_t n_vocab);

// The body of a request as a JSON object, or an ApiError (400, invalid_json).
nlohmann::json parse_body(const std::string& body);

// POST /v1/embeddings: `input` as texts or as token ids (one list per input).
struct EmbeddingRequest {
    std::string model;
    std::vector<std::string> texts;                 // input as text
    std::vector<std::vector<int32_t>> token_inputs;  // input as token ids
    bool base64 = false;                            // encoding_format: "base64"
    int dimensions = 0;                             // 0: not given
};
EmbeddingRequest parse_embedding_request(const std::string& body);
// The answer: one {"object": "embedding", "index", "embedding"} per row (float32 as a list of
// numbers, or their little-endian bytes in base64).
nlohmann::json embeddings_json(const std::string& model, const std::vector<std::vector<float>>& rows, bool base64,
                               int prompt_tokens);
std::string base64_floats(const std::vector<float>& values);

// One generated token's log-probabilities: the chosen token's and the most likely ones'.
struct TokenLogprobs {
    int32_t id = 0;
    std::string piece;
    float logprob = 0;
    std::vector<TokenAlternative> top;
};
// choices[].logprobs: chat's {"content": [{"token", "logprob", "bytes", "top_logprobs"}]}, or
// completions' {"tokens", "token_logprobs", "top_logprobs", "text_offset"} (text_offset from
// `offset`, the answer's bytes before the first of these tokens).
nlohmann::json logprobs_json(Endpoint endpoint, const std::vector<TokenLogprobs>& tokens, int top_n, size_t offset = 0);

// OpenAI's finish_reason for how a generation ended: "stop" (end of generation, a stop string)
// or "length" (max_tokens, the context full).
const char* finish_reason(StopReason reason);

// What every answer of one request shares.
struct ResponseHeader {
    Endpoint endpoint = Endpoint::Chat;
    std::string id;     // "chatcmpl-..." / "cmpl-..."
    int64_t created = 0;
    std::string model;
    int choice = 0;     // the choice an answer or chunk is of (its "index")
};
nlohmann::json usage_json(int prompt_tokens, int completion_tokens);
// The whole answer (stream: false). tool_calls: the message's calls (its content null when
// there is no text).
nlohmann::json completion_json(const ResponseHeader& h, const std::string& text, const char* finish,
                               int prompt_tokens, int completion_tokens,
                               const nlohmann::json& logprobs = nullptr, const std::vector<ToolCall>& tool_calls = {});
// A chat chunk whose delta carries tool calls (each whole, with its index).
nlohmann::json tool_calls_chunk_json(const ResponseHeader& h, const std::vector<ToolCall>& calls);
// One server-sent event's object (stream: true): `text` with finish == nullptr; the last one
// has finish set (and no text). role_only: the chat's first chunk ({"role": "assistant"}).
nlohmann::json chunk_json(const ResponseHeader& h, const std::string& text, const char* finish, bool role_only = false,
                          const nlohmann::json& logprobs = nullptr);
// The usage chunk that ends a stream when stream_options.include_usage: no choices.
nlohmann::json usage_chunk_json(const ResponseHeader& h, int prompt_tokens, int completion_tokens);

}  // namespace vkllm::cli::server
