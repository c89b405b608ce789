// vkllm serve: an OpenAI-compatible HTTP server (cpp-httplib). One Model, one worker thread
// that owns the Session and answers requests first come, first served from a bounded queue;
// HTTP threads parse requests, queue them and send the text as it comes (server-sent events
// when stream: true). A client that goes away stops its generation.
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

#include <httplib.h>

#include "chat_prompt.h"
#include "model_file.h"
#include "options.h"
#include "server_api.h"
#include "server_connection.h"
#include "server_worker.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm::cli {
namespace {

using nlohmann::json;
using namespace server;

const char* kUsage =
    "vkllm serve [-m MODEL.gguf] [--host 127.0.0.1] [--port 8080] [-c CTX] [--queue 16] [--device D] [--quiet]\n"
    "            [--cache-type auto|f16|f32|q8_0]\n"
    "  POST /v1/chat/completions, POST /v1/completions (stream: true for server-sent events),\n"
    "  GET /v1/models, GET /health. --port 0: any free port (the line \"listening on\" names it).\n"
    "  --queue: requests that may wait while one is generated; more are answered 503 with Retry-After.\n"
    "  --quiet: no line per request on stderr. SIGINT/SIGTERM: stop (in-flight requests are cancelled).\n"
    "  without -m: the small model built into vkllm";

// How often a waiting HTTP thread looks whether its client is still connected.
constexpr std::chrono::milliseconds kPoll{100};

std::string model_id(const Options& o, const Model& model) {
    if (!o.has("-m")) return model.info().name.empty() ? "vkllm" : model.info().name;
    std::string name = o.str("-m");
    name = name.substr(name.find_last_of('/') + 1);
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".gguf") == 0) name.resize(name.size() - 5);
    return name;
}

void send_error(httplib::Response& res, const ApiError& e) {
    res.status = e.status;
    res.set_content(error_body(e).dump(), "application/json");
}

std::string sse(const json& event) { return "data: " + event.dump() + "\n\n"; }

class Server {
public:
    Server(const Model& model, Session& session, std::string id, size_t queue)
        : model_(model), format_(model), session_n_ctx_(session.n_ctx()), id_(std::move(id)), worker_(session, queue) {}

    void routes(httplib::Server& http) {
        http.Post("/v1/chat/completions",
                  [this](const httplib::Request& req, httplib::Response& res) { complete(Endpoint::Chat, req, res); });
        http.Post("/v1/completions",
                  [this](const httplib::Request& req, httplib::Response& res) { complete(Endpoint::Completion, req, res); });
        http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
            res.set_content(json{{"object", "list"}, {"data", json::array({model_json()})}}.dump(), "application/json");
        });
        http.Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
            if (req.matches[1] == id_) return res.set_content(model_json().dump(), "application/json");
            send_error(res, ApiError(404, "the model '" + std::string(req.matches[1]) + "' does not exist", "model",
                                     "model_not_found"));
        });
        http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
            res.set_content(json{{"status", "ok"}, {"waiting", worker_.waiting()},
                                 {"completed", worker_.completed()}, {"cancelled", worker_.cancelled()}}.dump(),
                            "application/json");
        });
        // Every error without a body of its own (no such route, a payload too large, ...).
        http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
            if (!res.body.empty()) return;
            const std::string what = res.status == 404 ? "no route " + req.method + " " + req.path
                                                       : "HTTP " + std::to_string(res.status) + " for " + req.path;
            const int status = res.status;
            send_error(res, ApiError(status, what, "", status == 404 ? "not_found" : ""));
        });
        http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
            std::string what = "an unknown exception";
            try {
                std::rethrow_exception(ep);
            } catch (const std::exception& e) {
                what = e.what();
            } catch (...) {
            }
            send_error(res, ApiError(500, what, "", "internal_error", "server_error"));
        });
    }

    void stop() { worker_.stop(); }

private:
    json model_json() const { return {{"id", id_}, {"object", "model"}, {"created", created_}, {"owned_by", "vkllm"}}; }

    // The prompt's tokens, or an ApiError.
    std::vector<int32_t> prompt_tokens(const CompletionRequest& r) const {
        std::vector<int32_t> tokens;
        if (r.endpoint == Endpoint::Chat) {
            try {
                tokens = format_.tokenize_whole(format_.render(r.messages, /*add_generation_prompt=*/true));
            } catch (const TemplateError& e) {
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

    void complete(Endpoint endpoint, const httplib::Request& req, httplib::Response& res) {
        std::shared_ptr<Job> job;
        ResponseHeader head{endpoint, "", std::time(nullptr), id_};
        CompletionRequest r;
        try {
            r = parse_request(endpoint, req.body, next_seed());
            if (!r.model.empty() && r.model != id_)
                throw ApiError(404, "the model '" + r.model + "' does not exist; this server has '" + id_ + "'", "model",
                               "model_not_found");
            std::vector<int32_t> prompt = prompt_tokens(r);
            const int room = session_n_ctx_ - int(prompt.size());
            r.options.max_tokens = r.options.max_tokens < 0 ? room : std::min(r.options.max_tokens, room);
            job = std::make_shared<Job>(std::move(prompt), r.options);
            if (!worker_.submit(job)) {
                res.set_header("Retry-After", "1");
                throw ApiError(503, "the server is busy: " + std::to_string(worker_.waiting()) +
                                        " requests are waiting; try again shortly", "", "queue_full", "server_error");
            }
        } catch (const ApiError& e) {
            return send_error(res, e);
        }
        head.id = (endpoint == Endpoint::Chat ? "chatcmpl-" : "cmpl-") + std::to_string(next_id_.fetch_add(1));
        const int fd = find_connection_socket(req.local_port, req.remote_addr, req.remote_port);
        if (r.stream)
            stream(res, head, job, fd, r.include_usage);
        else
            answer(res, head, job, fd);
    }

    // stream: false — the whole answer once it is done.
    void answer(httplib::Response& res, const ResponseHeader& head, const std::shared_ptr<Job>& job, int fd) {
        std::string text;
        while (!job->take(text, kPoll)) {
            if (peer_closed(fd)) worker_.cancel(job);  // keeps waiting for the worker to let go of it
        }
        const GenerateResult& g = job->result();
        if (g.reason == StopReason::Error)
            return send_error(res, ApiError(500, g.message, "", "generation_failed", "server_error"));
        if (g.reason == StopReason::Cancelled || g.reason == StopReason::Callback)
            return send_error(res, ApiError(503, "the request was cancelled (the client left or the server is stopping)",
                                            "", "cancelled", "server_error"));
        res.set_content(completion_json(head, g.text, finish_reason(g.reason), int(job->prompt.size()), completion_tokens(g))
                            .dump(),
                        "application/json");
    }

    // stream: true — one server-sent event per piece of text, then the finish reason, the usage
    // (stream_options.include_usage) and [DONE].
    void stream(httplib::Response& res, const ResponseHeader& head, const std::shared_ptr<Job>& job, int fd,
                bool include_usage) {
        res.set_header("Cache-Control", "no-cache");
        auto started = std::make_shared<bool>(false);
        res.set_chunked_content_provider(
            "text/event-stream",
            [this, head, job, fd, include_usage, started](size_t, httplib::DataSink& sink) {
                auto send = [&](const std::string& event) {
                    if (sink.write(event.data(), event.size())) return true;
                    worker_.cancel(job);  // the client is gone
                    return false;
                };
                if (!*started) {
                    *started = true;
                    if (head.endpoint == Endpoint::Chat && !send(sse(chunk_json(head, "", nullptr, true)))) return false;
                }
                std::string text;
                const bool done = job->take(text, kPoll);
                if (!text.empty() && !send(sse(chunk_json(head, text, nullptr)))) return false;
                if (!done) {
                    if (!peer_closed(fd)) return true;  // called again for the next piece
                    worker_.cancel(job);
                    return false;
                }
                const GenerateResult& g = job->result();
                if (g.reason == StopReason::Error || g.reason == StopReason::Cancelled || g.reason == StopReason::Callback) {
                    const ApiError e(500, g.reason == StopReason::Error ? g.message : "the request was cancelled", "",
                                     g.reason == StopReason::Error ? "generation_failed" : "cancelled", "server_error");
                    send(sse(error_body(e)));
                } else {
                    if (!send(sse(chunk_json(head, "", finish_reason(g.reason))))) return false;
                    if (include_usage &&
                        !send(sse(usage_chunk_json(head, int(job->prompt.size()), completion_tokens(g)))))
                        return false;
                }
                send("data: [DONE]\n\n");
                sink.done();
                return true;
            },
            [this, job](bool success) {
                if (!success) worker_.cancel(job);  // the connection ended before the answer did
            });
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
    Worker worker_;
};

int serve(const Args& args) {
    Options o(args, {"-m", "--host", "--port", "-c", "--queue", "--device", "--cache-type"}, {"--quiet"});
    const std::string host = o.str("--host", "127.0.0.1");
    const int64_t port = o.integer("--port", 8080, 0, 65535);
    const int64_t queue = o.integer("--queue", 16, 1, 4096);
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
    httplib::Server http;
    // Threads for every request that may wait, the running one, and a few quick ones (health,
    // models, errors, 503 answers).
    const size_t threads = size_t(queue) + 8;
    http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    http.set_payload_max_length(8 << 20);
    if (!o.has("--quiet"))
        http.set_logger([](const httplib::Request& req, const httplib::Response& res) {
            std::fprintf(stderr, "vkllm serve: %s %s %d\n", req.method.c_str(), req.path.c_str(), res.status);
        });
    server.routes(http);

    int bound = int(port);
    if (port == 0)
        bound = http.bind_to_any_port(host);
    else if (!http.bind_to_port(host, int(port)))
        bound = -1;
    if (bound <= 0) throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port));
    std::fprintf(stderr, "vkllm serve: %s (%s), context %d tokens, queue %lld; listening on http://%s:%d\n", id.c_str(),
                 model->info().arch.c_str(), session.n_ctx(), static_cast<long long>(queue), host.c_str(), bound);

    std::atomic<bool> finished{false};
    std::atomic<int> got_signal{0};
    std::thread signals([&] {
        const timespec tick{0, 200 * 1000 * 1000};
        while (!finished.load()) {
            const int sig = sigtimedwait(&stop_signals, nullptr, &tick);
            if (sig <= 0) continue;
            got_signal = sig;
            std::fprintf(stderr, "vkllm serve: %s: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
            server.stop();  // answers the waiting and running requests (cancelled)
            http.stop();
            return;
        }
    });
    const bool listened = http.listen_after_bind();
    finished = true;
    signals.join();
    server.stop();
    if (!listened && got_signal.load() == 0) throw std::runtime_error("the server stopped listening");
    std::fprintf(stderr, "vkllm serve: stopped\n");
    return 0;
}

}  // namespace

int cmd_serve(const Args& args) { return with_usage(kUsage, serve, args); }

}  // namespace vkllm::cli
