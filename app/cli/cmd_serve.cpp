// vkllm serve: an OpenAI-compatible HTTP server (app/http). One Model, one worker thread that
// owns the Session and answers requests first come, first served from a bounded queue (with
// --parallel N: a scheduler thread that owns a BatchSession of N slots and decodes every
// running request in one batched pass per token, server_batch_worker.h); each
// connection's thread parses its requests, queues them and sends the text as it comes
// (server-sent events when stream: true). A client that goes away stops its generation, and a
// client that misbehaves (slow, huge, malformed) is answered 4xx and costs only its connection.
// Besides chat and completions: JSON output (response_format) and tool calls (tools,
// tool_choice) by constrained sampling (docs/serve.md), embeddings (encoders), llama-server's
// /tokenize and /detokenize, Prometheus /metrics, an optional API key, one log line per request.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>
#include <pthread.h>
#include <random>
#include <string>
#include <thread>

#include "chat_prompt.h"
#include "http_server.h"
#include "json_text.h"
#include "model_file.h"
#include "options.h"
#include "server_api.h"
#include "server_metrics.h"
#include "server_batch_worker.h"
#include "server_worker.h"
#include "vkllm/batch.h"
#include "vkllm/model.h"
#include "vkllm/session.h"
#include "vkllm/tool_calls.h"

namespace vkllm::cli {
namespace {

using nlohmann::json;
using namespace server;

const char* kUsage =
    "vkllm serve [-m MODEL.gguf] [--host 127.0.0.1] [--port 8080] [-c CTX] [--queue 16] [--device D] [--quiet]\n"
    "            [--cache-type auto|f16|f32|q8_0] [--timeout 30] [--max-connections 256] [--api-key KEY]\n"
    "            [--parallel N]\n"
    "  POST /v1/chat/completions, POST /v1/completions (stream: true for server-sent events),\n"
    "  POST /v1/embeddings (encoders), GET /v1/models (each also without /v1), POST /tokenize,\n"
    "  POST /detokenize, GET /metrics (Prometheus), GET /health.\n"
    "  Chat's response_format (json_object, json_schema) and tools / tool_choice: docs/serve.md.\n"
    "  --port 0: any free port (the line \"listening on\" names it).\n"
    "  --api-key (or the environment variable VKLLM_API_KEY): every route but /health needs\n"
    "    \"Authorization: Bearer KEY\" (401 without).\n"
    "  --queue: requests that may wait while one is generated; more are answered 503 with Retry-After.\n"
    "  --parallel N: N generations at once (default 1), each in its own slot of KV cache, decoded together\n"
    "    in one batched forward pass per token (continuous batching); -c is each slot's context.\n"
    "  --timeout: seconds a request's header and body may take to arrive (408 after), that a kept-alive\n"
    "    connection may stay idle, and that an answer may wait for a client that stops reading.\n"
    "  --max-connections: connections served at once; more are answered 503.\n"
    "  Requests: header at most 32 KiB and 100 fields (431), body at most 8 MiB (413).\n"
    "  --quiet: no line per request on stderr (method, path, status, seconds, tokens). SIGINT/SIGTERM: stop (in-flight requests are cancelled).\n"
    "  without -m: the small model built into vkllm";

// How often a waiting connection thread looks whether its client is still connected.
constexpr std::chrono::milliseconds kPoll{100};

constexpr const char* kJson = "application/json";

std::string model_id(const Options& o, const Model& model) {
    if (!o.has("-m")) return model.info().name.empty() ? "vkllm" : model.info().name;
    std::string name = o.str("-m");
    name = name.substr(name.find_last_of('/') + 1);
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".gguf") == 0) name.resize(name.size() - 5);
    return name;
}

void send_error(http::Responder& res, const ApiError& e) {
    http::Headers extra;
    if (e.status == 503) extra.emplace_back("Retry-After", "1");
    res.send(e.status, kJson, app::json_text(error_body(e)), extra);
}

// The error the HTTP layer answers by itself (a malformed or oversized request, a timeout, too
// many connections), in OpenAI's shape.
ApiError http_error(int status, const std::string& message) {
    const char* code = status == 408   ? "request_timeout"
                       : status == 411 ? "length_required"
                       : status == 413 ? "payload_too_large"
                       : status == 431 ? "header_too_large"
                       : status == 503 ? "too_many_connections"
                       : status == 505 ? "http_version_not_supported"
                       : status >= 500 ? "internal_error"
                                       : "invalid_request";
    return ApiError(status, message, "", code, status >= 500 ? "server_error" : "invalid_request_error");
}

std::string sse(const json& event) { return "data: " + app::json_text(event) + "\n\n"; }

// Paths served with and without the /v1 prefix (llama-server's clients call them without).
std::string without_v1(const std::string& path) { return path.rfind("/v1/", 0) == 0 ? path.substr(3) : path; }

// Equal strings in a time that does not depend on where they differ.
bool same_secret(const std::string& a, const std::string& b) {
    if (a.size() != b.size()) return false;
    unsigned char diff = 0;
    for (size_t i = 0; i < a.size(); ++i) diff |= uint8_t(a[i]) ^ uint8_t(b[i]);
    return diff == 0;
}

bool valid_utf8(const std::string& s) {
    for (size_t i = 0; i < s.size();) {
        const unsigned char c = uint8_t(s[i]);
        const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        for (size_t k = 1; k < n; ++k)
            if ((uint8_t(s[i + k]) & 0xC0) != 0x80) return false;
        i += n;
    }
    return true;
}

class Server {
public:
    // runner: a Worker (one Session) or a BatchWorker (--parallel); n_ctx: the context of one
    // generation.
    Server(const Model& model, JobRunner& runner, int n_ctx, std::string id, std::string api_key)
        : model_(model), format_(model), session_n_ctx_(n_ctx), id_(std::move(id)), api_key_(std::move(api_key)),
          worker_(runner) {
        const ModelInfo& info = model.info();
        encoder_ = !info.layers.empty() && !info.layers[0].attention.causal;
        if (model.bos() >= 0) bos_text_ = model.token_text(model.bos());
        if (model.eos() >= 0) eos_text_ = model.token_text(model.eos());
        if (format_.templated()) tool_format_ = tool_format(info.chat_template);
    }

    void handle(const http::Request& req, http::Responder& res) {
        const std::string path = without_v1(req.path);
        const bool post = req.method == "POST", get = req.method == "GET";
        if (!api_key_.empty() && path != "/health") {
            const std::string_view auth = req.header("Authorization");
            const std::string bearer = "Bearer ";
            if (auth.size() <= bearer.size() || auth.substr(0, bearer.size()) != bearer ||
                !same_secret(std::string(auth.substr(bearer.size())), api_key_)) {
                const ApiError e(401,
                                 auth.empty() ? "no API key: send the header 'Authorization: Bearer KEY'"
                                              : "incorrect API key provided",
                                 "", "invalid_api_key");
                return res.send(401, kJson, app::json_text(error_body(e)), {{"WWW-Authenticate", "Bearer"}});
            }
        }
        try {
            if (path == "/chat/completions" && post) return complete(Endpoint::Chat, req, res);
            if (path == "/completions" && post) return complete(Endpoint::Completion, req, res);
            if (path == "/embeddings" && post) return embeddings(req, res);
            if (path == "/tokenize" && post) return tokenize(req, res);
            if (path == "/detokenize" && post) return detokenize(req, res);
            if (path == "/models" && get)
                return res.send(200, kJson,
                                app::json_text(json{{"object", "list"}, {"data", json::array({model_json()})}}));
            if (path.rfind("/models/", 0) == 0 && path.size() > 8 && get) {
                const std::string name = path.substr(8);
                if (name == id_) return res.send(200, kJson, app::json_text(model_json()));
                throw ApiError(404, "the model '" + name + "' does not exist", "model", "model_not_found");
            }
            if (path == "/health" && get)
                return res.send(200, kJson,
                                app::json_text(json{{"status", "ok"}, {"waiting", worker_.waiting()},
                                                    {"completed", worker_.completed()}, {"cancelled", worker_.cancelled()}}));
            if (path == "/metrics" && get) {
                Metrics::Gauges g;
                g.waiting = worker_.waiting();
                g.busy = worker_.busy();
                g.busy_seconds = worker_.busy_seconds();
                g.connections = connections ? connections() : 0;
                g.slots = worker_.slots();
                g.slots_busy = worker_.slots_busy();
                return res.send(200, "text/plain; version=0.0.4; charset=utf-8", metrics.text(g));
            }
            const bool known = path == "/chat/completions" || path == "/completions" || path == "/models" ||
                               path.rfind("/models/", 0) == 0 || path == "/embeddings" || path == "/tokenize" ||
                               path == "/detokenize" || path == "/health" || path == "/metrics";
            if (known) throw ApiError(405, req.method + " is not served on " + req.path, "", "method_not_allowed");
            throw ApiError(404, "no route " + req.method + " " + req.path, "", "not_found");
        } catch (const ApiError& e) {
            if (!res.answered()) send_error(res, e);
        }
    }

    Metrics metrics;
    std::function<size_t()> connections;  // open HTTP connections, for /metrics

    void stop() {
        stopping_ = true;
        worker_.stop();
    }

private:
    json model_json() const { return {{"id", id_}, {"object", "model"}, {"created", created_}, {"owned_by", "vkllm"}}; }

    // The prompt's tokens, or an ApiError. A chat template is rendered until the client leaves
    // or the server stops.
    // `tools_json`: the tools the template shows (empty: none); `answer_prefix`: text put after
    // the generation prompt, which the answer continues (a forced tool call's opening).
    std::vector<int32_t> prompt_tokens(const CompletionRequest& r, const http::Responder& res,
                                       const std::string& tools_json = "", const std::string& answer_prefix = "") const {
        std::vector<int32_t> tokens;
        if (r.endpoint == Endpoint::Chat) {
            const auto cancelled = [&] { return stopping_.load() || res.client_gone(); };
            if (!format_.templated() && r.tool_message >= 0) {
                const std::string param = "messages[" + std::to_string(r.tool_message) + "]";
                throw ApiError(400, "'" + param + "' has tool calls or the tool role, and the model has no chat "
                                    "template to render them", param, "unsupported_parameter");
            }
            try {
                if (format_.templated()) {
                    // The messages as JSON, so that tool calls and tool messages reach the template.
                    ChatTemplateInputs in;
                    in.messages_json = r.messages_json.dump();
                    in.tools_json = tools_json;
                    in.add_generation_prompt = true;
                    in.bos_token = bos_text_;
                    in.eos_token = eos_text_;
                    in.cancelled = cancelled;
                    tokens = format_.tokenize_whole(render_chat_template(model_.info().chat_template, in) + answer_prefix);
                } else {
                    tokens = format_.tokenize_whole(format_.render(r.messages, /*add_generation_prompt=*/true, cancelled));
                }
            } catch (const TemplateError& e) {
                if (e.cancelled())
                    throw ApiError(503, "the request was cancelled (the client left or the server is stopping)", "",
                                   "cancelled", "server_error");
                throw ApiError(400, std::string("the model's chat template cannot render these messages: ") + e.what(),
                               "messages", "invalid_value");
            }
        } else if (r.prompt_is_tokens) {
            for (int32_t t : r.prompt_tokens)
                if (t < 0 || t >= model_.n_vocab())
                    throw ApiError(400, "token id " + std::to_string(t) + " is outside the vocabulary (" +
                                            std::to_string(model_.n_vocab()) + " tokens)", "prompt", "invalid_value");
            tokens = r.prompt_tokens;
        } else {
            tokens = model_.tokenize(r.prompt, /*add_special=*/true);
        }
        if (tokens.empty()) throw ApiError(400, "the prompt is empty", "prompt", "invalid_value");
        if (int(tokens.size()) >= session_n_ctx_)
            throw ApiError(400, "this model's context is " + std::to_string(session_n_ctx_) + " tokens and the prompt is " +
                                    std::to_string(tokens.size()) + " tokens: no room for an answer",
                           r.endpoint == Endpoint::Chat ? "messages" : "prompt", "context_length_exceeded");
        return tokens;
    }

    void complete(Endpoint endpoint, const http::Request& req, http::Responder& res) {
        std::shared_ptr<Job> job;
        ResponseHeader head{endpoint, "", std::time(nullptr), id_};
        CompletionRequest r;
        std::optional<ToolCallReader> tools;  // tools offered: calls are read out of each choice's answer
        try {
            r = parse_request(endpoint, req.body, next_seed());
            check_model(r.model);
            check_logit_bias(r, model_.n_vocab());
            if (encoder_)
                throw ApiError(400, "the model '" + id_ + "' is an encoder: it embeds (POST /v1/embeddings) but does "
                                    "not generate", "model", "model_not_supported");
            std::string tools_json, answer_prefix;
            if (r.tool_choice != CompletionRequest::ToolChoice::None) {
                if (tool_format_ == ToolFormat::None)
                    throw ApiError(400, "'tools' cannot be used with this model: its chat template has no tool-call "
                                        "format this server reads (Hermes <tool_call>, Llama 3.x JSON, Mistral [TOOL_CALLS])",
                                   "tools", "unsupported_parameter");
                tools_json = r.tools.dump();
                if (r.tool_choice == CompletionRequest::ToolChoice::Required ||
                    r.tool_choice == CompletionRequest::ToolChoice::Named) {
                    try {
                        ForcedCall forced = forced_call(tool_format_, r.tools.dump(), r.tool_name);
                        answer_prefix = forced.prefix;
                        r.json = forced.grammar;
                    } catch (const JsonSchemaError& e) {
                        throw ApiError(400, std::string("'tools' parameters cannot be enforced for tool_choice: ") + e.what(),
                                       "tools", "unsupported_schema_keyword");
                    }
                }
                tools.emplace(tool_format_, answer_prefix);
            }
            std::vector<int32_t> prompt = prompt_tokens(r, res, tools_json, answer_prefix);
            const int room = session_n_ctx_ - int(prompt.size());
            r.options.max_tokens = r.options.max_tokens < 0 ? room : std::min(r.options.max_tokens, room);
            job = std::make_shared<Job>(std::move(prompt), r.options, r.logprobs, r.json, r.n);
            if (!worker_.submit(job))
                throw ApiError(503, "the server is busy: " + std::to_string(worker_.waiting()) +
                                        " requests are waiting; try again shortly", "", "queue_full", "server_error");
        } catch (const ApiError& e) {
            return send_error(res, e);
        }
        head.id = (endpoint == Endpoint::Chat ? "chatcmpl-" : "cmpl-") + std::to_string(next_id_.fetch_add(1));
        const std::string echo = !r.echo ? "" : r.prompt_is_tokens ? model_.detokenize(r.prompt_tokens) : r.prompt;
        const ToolCallReader* tool_reader = tools ? &*tools : nullptr;
        if (r.stream)
            stream(res, head, job, r, echo, tool_reader);
        else
            answer(res, head, job, r, echo, tool_reader);
        // A stream left early (the client went away) has cancelled its job: it ends within a step.
        int n = 0, evaluated = 0;
        double prompt_seconds = 0, decode_seconds = 0;
        for (int i = 0; i < job->n_choices; ++i) {
            std::string rest;
            while (!job->take(rest, kPoll, nullptr, i)) rest.clear();
            const GenerateResult& g = job->result(i);
            n += completion_tokens(g);
            evaluated += g.n_prompt_evaluated;
            prompt_seconds += g.prompt_seconds;
            decode_seconds += g.decode_seconds;
        }
        const GenerateResult& g = job->result(job->n_choices - 1);
        metrics.generation(int(job->prompt.size()), evaluated, n, prompt_seconds, decode_seconds);
        const std::string choices = job->n_choices > 1 ? " in " + std::to_string(job->n_choices) + " choices" : "";
        char note[200];
        std::snprintf(note, sizeof note, "prompt %zu tokens (%d evaluated), %d generated%s (%s), first token %.3f s, %.4f s/token",
                      job->prompt.size(), evaluated, n, choices.c_str(), to_string(g.reason),
                      job->result(0).first_token_seconds, n > 0 ? decode_seconds / n : 0.0);
        res.note = note;
    }

    void check_model(const std::string& model) const {
        if (!model.empty() && model != id_)
            throw ApiError(404, "the model '" + model + "' does not exist; this server has '" + id_ + "'", "model",
                           "model_not_found");
    }

    // POST /v1/embeddings: each input through Session::embed with the model's pooling, as
    // `vkllm embed` without --normalize.
    void embeddings(const http::Request& req, http::Responder& res) {
        EmbeddingRequest r = parse_embedding_request(req.body);
        check_model(r.model);
        const ModelInfo& info = model_.info();
        if (!encoder_)
            throw ApiError(400, "the model '" + id_ + "' cannot embed: the engine embeds with encoders (BERT), and "
                                "this model is causal", "model", "model_not_supported");
        if (info.pooling == Pooling::None)
            throw ApiError(400, "the model '" + id_ + "' pools no vector per text (its pooling type is none)", "model",
                           "model_not_supported");
        if (r.dimensions != 0 && r.dimensions != info.n_embd)
            throw ApiError(400, "'dimensions' must be the model's " + std::to_string(info.n_embd) + " (no truncation)",
                           "dimensions", "unsupported_parameter");
        std::vector<std::vector<int32_t>> inputs = std::move(r.token_inputs);
        for (const auto& ids : inputs)
            for (int32_t t : ids)
                if (t >= model_.n_vocab())
                    throw ApiError(400, "token id " + std::to_string(t) + " is outside the vocabulary (" +
                                            std::to_string(model_.n_vocab()) + " tokens)", "input", "invalid_value");
        for (const std::string& text : r.texts) inputs.push_back(model_.tokenize(text, /*add_special=*/true));
        int tokens = 0;
        for (const auto& ids : inputs) {
            if (ids.empty()) throw ApiError(400, "an input has no tokens", "input", "invalid_value");
            tokens += int(ids.size());
        }
        auto job = std::make_shared<Job>(std::move(inputs));
        if (!worker_.submit(job))
            throw ApiError(503, "the server is busy: " + std::to_string(worker_.waiting()) +
                                    " requests are waiting; try again shortly", "", "queue_full", "server_error");
        std::string unused;
        while (!job->take(unused, kPoll))
            if (res.client_gone()) worker_.cancel(job);
        const GenerateResult& g = job->result();
        if (g.reason == StopReason::Error) throw job->embed_error();
        if (g.reason == StopReason::Cancelled)
            throw ApiError(503, "the request was cancelled (the client left or the server is stopping)", "",
                           "cancelled", "server_error");
        metrics.embedding(tokens);
        res.note = std::to_string(job->embeddings().size()) + " inputs, " + std::to_string(tokens) + " tokens";
        res.send(200, kJson, app::json_text(embeddings_json(id_, job->embeddings(), r.base64, tokens)));
    }

    // POST /tokenize (llama-server's shape): {"content", "add_special" (false), "parse_special"
    // (true), "with_pieces" (false)} -> {"tokens": [id, ...]} or [{"id", "piece"}, ...].
    void tokenize(const http::Request& req, http::Responder& res) const {
        const json body = parse_body(req.body);
        for (auto it = body.begin(); it != body.end(); ++it)
            if (it.key() != "content" && it.key() != "add_special" && it.key() != "parse_special" &&
                it.key() != "with_pieces")
                throw ApiError(400, "'" + it.key() + "' is not a field of /tokenize", it.key(), "unknown_parameter");
        if (!body.contains("content") || !body["content"].is_string())
            throw ApiError(400, "'content' must be a string", "content", "invalid_type");
        auto flag = [&](const char* name, bool fallback) {
            if (!body.contains(name) || body[name].is_null()) return fallback;
            if (!body[name].is_boolean()) throw ApiError(400, std::string("'") + name + "' must be a boolean", name, "invalid_type");
            return body[name].get<bool>();
        };
        const bool add_special = flag("add_special", false), parse_special = flag("parse_special", true),
                   with_pieces = flag("with_pieces", false);
        const std::vector<int32_t> ids = model_.tokenize(body["content"].get<std::string>(), add_special, parse_special);
        json tokens = json::array();
        for (int32_t id : ids) {
            if (!with_pieces) {
                tokens.push_back(id);
                continue;
            }
            const std::string piece = model_.piece(id, /*render_special=*/true);
            json bytes = json::array();
            for (unsigned char c : piece) bytes.push_back(int(c));
            tokens.push_back({{"id", id}, {"piece", valid_utf8(piece) ? json(piece) : bytes}});
        }
        res.note = std::to_string(ids.size()) + " tokens";
        res.send(200, kJson, app::json_text(json{{"tokens", tokens}}));
    }

    // POST /detokenize: {"tokens": [id, ...]} -> {"content": text} (control tokens as their text).
    void detokenize(const http::Request& req, http::Responder& res) const {
        const json body = parse_body(req.body);
        for (auto it = body.begin(); it != body.end(); ++it)
            if (it.key() != "tokens")
                throw ApiError(400, "'" + it.key() + "' is not a field of /detokenize", it.key(), "unknown_parameter");
        if (!body.contains("tokens") || !body["tokens"].is_array())
            throw ApiError(400, "'tokens' must be a list of token ids", "tokens", "invalid_type");
        std::vector<int32_t> ids;
        for (const json& t : body["tokens"]) {
            if (!t.is_number_integer()) throw ApiError(400, "'tokens' must be a list of token ids", "tokens", "invalid_type");
            const bool fits = !t.is_number_unsigned() ? t.get<int64_t>() >= 0 && t.get<int64_t>() < model_.n_vocab()
                                                      : t.get<uint64_t>() < uint64_t(model_.n_vocab());
            if (!fits)
                throw ApiError(400, "token id " + t.dump() + " is outside the vocabulary (" +
                                        std::to_string(model_.n_vocab()) + " tokens)", "tokens", "invalid_value");
            ids.push_back(int32_t(t.get<int64_t>()));
        }
        res.note = std::to_string(ids.size()) + " tokens";
        res.send(200, kJson, app::json_text(json{{"content", model_.detokenize(ids, /*render_special=*/true)}}));
    }

    // stream: false — the whole answer once every choice is done.
    void answer(http::Responder& res, const ResponseHeader& head, const std::shared_ptr<Job>& job,
                const CompletionRequest& r, const std::string& echo, const ToolCallReader* tools) {
        json out;
        int generated = 0;
        for (int i = 0; i < job->n_choices; ++i) {
            std::string text;
            std::vector<TokenLogprobs> tokens;
            while (!job->take(text, kPoll, &tokens, i)) {
                if (res.client_gone()) worker_.cancel(job);  // keeps waiting for the worker to let go of it
            }
            const GenerateResult& g = job->result(i);
            const bool failed =
                g.reason == StopReason::Error || g.reason == StopReason::Cancelled || g.reason == StopReason::Callback;
            if (failed) worker_.cancel(job);  // the later choices are not generated
            if (g.reason == StopReason::Error)
                return send_error(res, ApiError(500, g.message, "", "generation_failed", "server_error"));
            if (g.reason == StopReason::Cancelled || g.reason == StopReason::Callback)
                return send_error(res, ApiError(503, "the request was cancelled (the client left or the server is stopping)",
                                                "", "cancelled", "server_error"));
            ResponseHeader h = head;
            h.choice = i;
            const json logprobs = r.logprobs ? logprobs_json(head.endpoint, tokens, r.top_logprobs, echo.size()) : json();
            json one;
            if (tools) {
                ToolCallReader reader = *tools;  // each choice read from the start
                std::string content = reader.push(g.text);
                ToolCallReader::Result calls = reader.finish();
                content += calls.content;
                const char* finish = calls.calls.empty() ? finish_reason(g.reason) : "tool_calls";
                one = completion_json(h, content, finish, 0, 0, logprobs, calls.calls);
            } else {
                one = completion_json(h, echo + g.text, finish_reason(g.reason), 0, 0, logprobs);
            }
            generated += completion_tokens(g);
            if (i == 0) out = std::move(one);
            else out["choices"].push_back(std::move(one["choices"][0]));
        }
        out["usage"] = usage_json(int(job->prompt.size()), generated);
        res.send(200, kJson, app::json_text(out));
    }

    // stream: true — per choice in turn, one server-sent event per piece of text, then its finish
    // reason (each event's choice carries its index); then the usage of all choices
    // (stream_options.include_usage) and [DONE]. Whatever goes wrong once the events have begun
    // ends this stream with an error event.
    void stream(http::Responder& res, const ResponseHeader& head, const std::shared_ptr<Job>& job,
                const CompletionRequest& r, const std::string& echo, const ToolCallReader* tools) {
        if (!res.begin_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}})) return worker_.cancel(job);
        try {
            int generated = 0;
            for (int i = 0; i < job->n_choices; ++i) {
                ResponseHeader h = head;
                h.choice = i;
                std::optional<ToolCallReader> reader;
                if (tools) reader.emplace(*tools);
                if (!stream_choice(res, h, job, r, echo, reader ? &*reader : nullptr)) return;
                generated += completion_tokens(job->result(i));
            }
            if (r.include_usage && !res.write(sse(usage_chunk_json(head, int(job->prompt.size()), generated)))) return;
        } catch (const std::exception& e) {
            worker_.cancel(job);
            res.write(sse(error_body(ApiError(500, std::string("the answer could not be sent: ") + e.what(), "",
                                              "internal_error", "server_error"))));
        }
        res.write("data: [DONE]\n\n");
        res.end_stream();
    }

    // One choice's events (h.choice). False when the stream must end here: the client left (the
    // job is cancelled; nothing more is written) or the choice failed (its error event written).
    bool stream_choice(http::Responder& res, const ResponseHeader& h, const std::shared_ptr<Job>& job,
                       const CompletionRequest& r, const std::string& echo, ToolCallReader* tools) {
        const int choice = h.choice;
        if (h.endpoint == Endpoint::Chat && !res.write(sse(chunk_json(h, "", nullptr, true)))) {
            worker_.cancel(job);
            return false;
        }
        if (!echo.empty() && !res.write(sse(chunk_json(h, echo, nullptr)))) {
            worker_.cancel(job);
            return false;
        }
        std::string text;
        std::vector<TokenLogprobs> tokens;  // taken, not yet sent
        size_t offset = echo.size();        // completions' text_offset of the next token
        // The tokens taken so far, as a chunk's logprobs (then forgotten).
        const auto logprobs = [&] {
            if (!r.logprobs) return json();
            json out = logprobs_json(h.endpoint, tokens, r.top_logprobs, offset);
            for (const TokenLogprobs& t : tokens) offset += t.piece.size();
            tokens.clear();
            return out;
        };
        for (;;) {
            text.clear();
            const bool done = job->take(text, kPoll, &tokens, choice);
            if (tools) text = tools->push(text);  // text that may be a tool call is held
            if (!text.empty() && !res.write(sse(chunk_json(h, text, nullptr, false, logprobs())))) {
                worker_.cancel(job);
                return false;
            }
            if (done) break;
            if (res.client_gone()) {
                worker_.cancel(job);
                return false;
            }
        }
        const GenerateResult& g = job->result(choice);
        if (g.reason == StopReason::Error || g.reason == StopReason::Cancelled || g.reason == StopReason::Callback) {
            const bool error = g.reason == StopReason::Error;
            worker_.cancel(job);  // the later choices are not generated
            res.write(sse(error_body(ApiError(500, error ? g.message : "the request was cancelled", "",
                                              error ? "generation_failed" : "cancelled", "server_error"))));
            return false;
        }
        const char* finish = finish_reason(g.reason);
        if (tools) {
            const ToolCallReader::Result calls = tools->finish();
            if (!calls.content.empty() && !res.write(sse(chunk_json(h, calls.content, nullptr)))) return false;
            if (!calls.calls.empty()) {
                if (!res.write(sse(tool_calls_chunk_json(h, calls.calls)))) return false;
                finish = "tool_calls";
            }
        }
        const json rest = tokens.empty() ? json() : logprobs();
        return res.write(sse(chunk_json(h, "", finish, false, rest)));
    }

    // A different seed for every request that gives none (splitmix64 of a counter).
    uint64_t next_seed() {
        uint64_t z = seed_counter_.fetch_add(0x9e3779b97f4a7c15ULL) + 0x9e3779b97f4a7c15ULL;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }

    // Generated tokens, not counting a final end-of-generation token.
    int completion_tokens(const GenerateResult& g) const {
        int n = int(g.tokens.size());
        if (n > 0 && model_.is_eog(g.tokens.back())) --n;
        return n;
    }

    const Model& model_;
    ChatFormat format_;
    const int session_n_ctx_;
    const std::string id_;
    const std::string api_key_;
    bool encoder_ = false;
    ToolFormat tool_format_ = ToolFormat::None;  // how the chat template's model writes tool calls
    std::string bos_text_, eos_text_;
    const int64_t created_ = std::time(nullptr);
    std::atomic<uint64_t> next_id_{1};
    std::atomic<uint64_t> seed_counter_{std::random_device{}()};
    std::atomic<bool> stopping_{false};
    JobRunner& worker_;
};

int serve(const Args& args) {
    Options o(args,
              {"-m", "--host", "--port", "-c", "--queue", "--device", "--cache-type", "--timeout", "--max-connections",
               "--api-key", "--parallel"},
              {"--quiet"});
    const std::string host = o.str("--host", "127.0.0.1");
    const int64_t port = o.integer("--port", 8080, 0, 65535);
    const int64_t queue = o.integer("--queue", 16, 1, 4096);
    const int64_t timeout_s = o.integer("--timeout", 30, 1, 24 * 3600);
    const int64_t max_connections = o.integer("--max-connections", 256, 1, 65536);
    const int64_t parallel = o.integer("--parallel", 1, 1, 256);
    SessionOptions so;
    so.n_ctx = int(o.integer("-c", 0, 0));
    so.kv_cache = cache_type(o);

    // SIGINT and SIGTERM are taken by one thread (sigwait), blocked in every other: the
    // threads started below inherit the mask.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error from send(), not a signal

    ModelOptions mo;
    mo.device = o.str("--device");
    auto file = open_model_file(o);
    auto model = Model::load(*file, mo);
    print_warnings(model->warnings());
    const ModelInfo& info = model->info();
    if (!info.layers.empty() && !info.layers[0].attention.causal) {
        // An encoder sees a whole text in one forward pass (as `vkllm embed`): batch = context.
        if (so.n_ctx == 0) so.n_ctx = std::min(info.n_ctx_train, 4096);
        so.n_batch = so.n_ctx;
    }
    // --parallel 1: one Session, one generation at a time; more: a BatchSession of that many
    // slots stepped together (continuous batching), for the models it can batch.
    std::unique_ptr<Session> session;
    std::unique_ptr<BatchSession> batch;
    std::unique_ptr<JobRunner> runner;
    if (parallel > 1) {
        const std::string why = batch_unsupported(*model);
        if (!why.empty())
            throw std::invalid_argument("--parallel " + std::to_string(parallel) + " needs batched decoding, and " + why +
                                        "; serve it with --parallel 1");
        BatchOptions bo;
        bo.n_slots = int(parallel);
        bo.n_ctx = so.n_ctx;
        bo.n_batch = std::max(so.n_batch, int(parallel));
        bo.kv_cache = so.kv_cache;
        batch = std::make_unique<BatchSession>(*model, bo);
        runner = std::make_unique<BatchWorker>(*batch, size_t(queue));
    } else {
        session = std::make_unique<Session>(*model, so);
        runner = std::make_unique<Worker>(*session, size_t(queue));
    }
    const int n_ctx = batch ? batch->n_ctx() : session->n_ctx();
    const std::string id = model_id(o, *model);
    std::string api_key = o.str("--api-key");
    if (api_key.empty())
        if (const char* env = std::getenv("VKLLM_API_KEY")) api_key = env;

    Server server(*model, *runner, n_ctx, id, api_key);
    http::ServerOptions ho;
    ho.host = host;
    ho.port = int(port);
    ho.max_connections = size_t(max_connections);
    ho.request_timeout = ho.idle_timeout = ho.send_timeout = std::chrono::seconds(timeout_s);
    ho.error_body = [](int status, const std::string& message) {
        return std::make_pair(std::string(kJson), app::json_text(error_body(http_error(status, message))));
    };
    const bool quiet = o.has("--quiet");
    ho.log = [&server, quiet](const http::LogEntry& e) {
        server.metrics.request(e.path, e.status, e.seconds);
        if (!quiet)
            std::fprintf(stderr, "vkllm serve: %s %s %d %.3f s%s%s\n", e.method.c_str(), e.path.c_str(), e.status,
                         e.seconds, e.note.empty() ? "" : ": ", e.note.c_str());
    };
    http::Server http(ho, [&server](const http::Request& req, http::Responder& res) { server.handle(req, res); });
    server.connections = [&http] { return http.connections(); };
    const int bound = http.listen();
    const std::string slots = parallel > 1 ? ", " + std::to_string(parallel) + " parallel slots" : "";
    std::fprintf(stderr, "vkllm serve: %s (%s%s), context %d tokens%s, queue %lld%s; listening on http://%s:%d\n",
                 id.c_str(), info.arch.c_str(), !info.layers.empty() && !info.layers[0].attention.causal ? ", an encoder" : "",
                 n_ctx, slots.c_str(), static_cast<long long>(queue), api_key.empty() ? "" : ", API key required",
                 host.c_str(), bound);

    std::atomic<bool> finished{false};
    std::thread signals([&] {
        const timespec tick{0, 200 * 1000 * 1000};
        while (!finished.load()) {
            const int sig = sigtimedwait(&stop_signals, nullptr, &tick);
            if (sig <= 0) continue;
            std::fprintf(stderr, "vkllm serve: %s: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
            server.stop();  // answers the waiting and running requests (cancelled), stops renders
            http.stop();
            return;
        }
    });
    http.run();
    finished = true;
    signals.join();
    server.stop();
    std::fprintf(stderr, "vkllm serve: stopped\n");
    return 0;
}

}  // namespace

int cmd_serve(const Args& args) { return with_usage(kUsage, serve, args); }

}  // namespace vkllm::cli
