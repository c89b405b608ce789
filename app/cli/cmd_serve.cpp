// vkllm serve: an OpenAI-compatible HTTP server (app/http). One Model, one worker thread that
// owns the Session and answers requests first come, first served from a bounded queue; each
// connection's thread parses its requests, queues them and sends the text as it comes
// (server-sent events when stream: true). A client that goes away stops its generation, and a
// client that misbehaves (slow, huge, malformed) is answered 4xx and costs only its connection.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <memory>
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
#include "server_worker.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm::cli {
namespace {

using nlohmann::json;
using namespace server;

const char* kUsage =
    "vkllm serve [-m MODEL.gguf] [--host 127.0.0.1] [--port 8080] [-c CTX] [--queue 16] [--device D] [--quiet]\n"
    "            [--cache-type auto|f16|f32|q8_0] [--timeout 30] [--max-connections 256]\n"
    "  POST /v1/chat/completions, POST /v1/completions (stream: true for server-sent events),\n"
    "  GET /v1/models, GET /health. --port 0: any free port (the line \"listening on\" names it).\n"
    "  --queue: requests that may wait while one is generated; more are answered 503 with Retry-After.\n"
    "  --timeout: seconds a request's header and body may take to arrive (408 after), that a kept-alive\n"
    "    connection may stay idle, and that an answer may wait for a client that stops reading.\n"
    "  --max-connections: connections served at once; more are answered 503.\n"
    "  Requests: header at most 32 KiB and 100 fields (431), body at most 8 MiB (413).\n"
    "  --quiet: no line per request on stderr. SIGINT/SIGTERM: stop (in-flight requests are cancelled).\n"
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

class Server {
public:
    Server(const Model& model, Session& session, std::string id, size_t queue)
        : model_(model), format_(model), session_n_ctx_(session.n_ctx()), id_(std::move(id)), worker_(session, queue) {}

    void handle(const http::Request& req, http::Responder& res) {
        const std::string& path = req.path;
        const bool post = req.method == "POST", get = req.method == "GET";
        if (path == "/v1/chat/completions" && post) return complete(Endpoint::Chat, req, res);
        if (path == "/v1/completions" && post) return complete(Endpoint::Completion, req, res);
        if (path == "/v1/models" && get)
            return res.send(200, kJson, app::json_text(json{{"object", "list"}, {"data", json::array({model_json()})}}));
        if (path.rfind("/v1/models/", 0) == 0 && path.size() > 11 && get) {
            const std::string name = path.substr(11);
            if (name == id_) return res.send(200, kJson, app::json_text(model_json()));
            return send_error(res, ApiError(404, "the model '" + name + "' does not exist", "model", "model_not_found"));
        }
        if (path == "/health" && get)
            return res.send(200, kJson,
                            app::json_text(json{{"status", "ok"}, {"waiting", worker_.waiting()},
                                                {"completed", worker_.completed()}, {"cancelled", worker_.cancelled()}}));
        const bool known = path == "/v1/chat/completions" || path == "/v1/completions" || path == "/v1/models" ||
                           path.rfind("/v1/models/", 0) == 0 || path == "/health";
        if (known)
            return send_error(res, ApiError(405, req.method + " is not served on " + path, "", "method_not_allowed"));
        send_error(res, ApiError(404, "no route " + req.method + " " + path, "", "not_found"));
    }

    void stop() {
        stopping_ = true;
        worker_.stop();
    }

private:
    json model_json() const { return {{"id", id_}, {"object", "model"}, {"created", created_}, {"owned_by", "vkllm"}}; }

    // The prompt's tokens, or an ApiError. A chat template is rendered until the client leaves
    // or the server stops.
    std::vector<int32_t> prompt_tokens(const CompletionRequest& r, const http::Responder& res) const {
        std::vector<int32_t> tokens;
        if (r.endpoint == Endpoint::Chat) {
            const auto cancelled = [&] { return stopping_.load() || res.client_gone(); };
            try {
                tokens = format_.tokenize_whole(format_.render(r.messages, /*add_generation_prompt=*/true, cancelled));
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
        try {
            r = parse_request(endpoint, req.body, next_seed());
            if (!r.model.empty() && r.model != id_)
                throw ApiError(404, "the model '" + r.model + "' does not exist; this server has '" + id_ + "'", "model",
                               "model_not_found");
            std::vector<int32_t> prompt = prompt_tokens(r, res);
            const int room = session_n_ctx_ - int(prompt.size());
            r.options.max_tokens = r.options.max_tokens < 0 ? room : std::min(r.options.max_tokens, room);
            job = std::make_shared<Job>(std::move(prompt), r.options);
            if (!worker_.submit(job))
                throw ApiError(503, "the server is busy: " + std::to_string(worker_.waiting()) +
                                        " requests are waiting; try again shortly", "", "queue_full", "server_error");
        } catch (const ApiError& e) {
            return send_error(res, e);
        }
        head.id = (endpoint == Endpoint::Chat ? "chatcmpl-" : "cmpl-") + std::to_string(next_id_.fetch_add(1));
        if (r.stream)
            stream(res, head, job, r.include_usage);
        else
            answer(res, head, job);
    }

    // stream: false — the whole answer once it is done.
    void answer(http::Responder& res, const ResponseHeader& head, const std::shared_ptr<Job>& job) {
        std::string text;
        while (!job->take(text, kPoll)) {
            if (res.client_gone()) worker_.cancel(job);  // keeps waiting for the worker to let go of it
        }
        const GenerateResult& g = job->result();
        if (g.reason == StopReason::Error)
            return send_error(res, ApiError(500, g.message, "", "generation_failed", "server_error"));
        if (g.reason == StopReason::Cancelled || g.reason == StopReason::Callback)
            return send_error(res, ApiError(503, "the request was cancelled (the client left or the server is stopping)",
                                            "", "cancelled", "server_error"));
        res.send(200, kJson,
                 app::json_text(completion_json(head, g.text, finish_reason(g.reason), int(job->prompt.size()),
                                                completion_tokens(g))));
    }

    // stream: true — one server-sent event per piece of text, then the finish reason, the usage
    // (stream_options.include_usage) and [DONE]. Whatever goes wrong once the events have begun
    // ends this stream with an error event.
    void stream(http::Responder& res, const ResponseHeader& head, const std::shared_ptr<Job>& job, bool include_usage) {
        if (!res.begin_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}})) return worker_.cancel(job);
        try {
            if (head.endpoint == Endpoint::Chat && !res.write(sse(chunk_json(head, "", nullptr, true))))
                return worker_.cancel(job);
            std::string text;
            for (;;) {
                text.clear();
                const bool done = job->take(text, kPoll);
                if (!text.empty() && !res.write(sse(chunk_json(head, text, nullptr)))) return worker_.cancel(job);
                if (done) break;
                if (res.client_gone()) return worker_.cancel(job);
            }
            const GenerateResult& g = job->result();
            if (g.reason == StopReason::Error || g.reason == StopReason::Cancelled || g.reason == StopReason::Callback) {
                const bool error = g.reason == StopReason::Error;
                res.write(sse(error_body(ApiError(500, error ? g.message : "the request was cancelled", "",
                                                  error ? "generation_failed" : "cancelled", "server_error"))));
            } else {
                if (!res.write(sse(chunk_json(head, "", finish_reason(g.reason))))) return;
                if (include_usage &&
                    !res.write(sse(usage_chunk_json(head, int(job->prompt.size()), completion_tokens(g)))))
                    return;
            }
        } catch (const std::exception& e) {
            worker_.cancel(job);
            res.write(sse(error_body(ApiError(500, std::string("the answer could not be sent: ") + e.what(), "",
                                              "internal_error", "server_error"))));
        }
        res.write("data: [DONE]\n\n");
        res.end_stream();
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
    const int64_t created_ = std::time(nullptr);
    std::atomic<uint64_t> next_id_{1};
    std::atomic<uint64_t> seed_counter_{std::random_device{}()};
    std::atomic<bool> stopping_{false};
    Worker worker_;
};

int serve(const Args& args) {
    Options o(args, {"-m", "--host", "--port", "-c", "--queue", "--device", "--cache-type", "--timeout", "--max-connections"},
              {"--quiet"});
    const std::string host = o.str("--host", "127.0.0.1");
    const int64_t port = o.integer("--port", 8080, 0, 65535);
    const int64_t queue = o.integer("--queue", 16, 1, 4096);
    const int64_t timeout_s = o.integer("--timeout", 30, 1, 24 * 3600);
    const int64_t max_connections = o.integer("--max-connections", 256, 1, 65536);
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
    Session session(*model, so);
    const std::string id = model_id(o, *model);

    Server server(*model, session, id, size_t(queue));
    http::ServerOptions ho;
    ho.host = host;
    ho.port = int(port);
    ho.max_connections = size_t(max_connections);
    ho.request_timeout = ho.idle_timeout = ho.send_timeout = std::chrono::seconds(timeout_s);
    ho.error_body = [](int status, const std::string& message) {
        return std::make_pair(std::string(kJson), app::json_text(error_body(http_error(status, message))));
    };
    if (!o.has("--quiet"))
        ho.log = [](const std::string& method, const std::string& path, int status) {
            std::fprintf(stderr, "vkllm serve: %s %s %d\n", method.c_str(), path.c_str(), status);
        };
    http::Server http(ho, [&server](const http::Request& req, http::Responder& res) { server.handle(req, res); });
    const int bound = http.listen();
    std::fprintf(stderr, "vkllm serve: %s (%s), context %d tokens, queue %lld; listening on http://%s:%d\n", id.c_str(),
                 model->info().arch.c_str(), session.n_ctx(), static_cast<long long>(queue), host.c_str(), bound);

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
