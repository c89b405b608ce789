#include "server_metrics.h"

#include <cstdio>
#include <set>

namespace vkllm::cli::server {
namespace {

std::string number(double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", x);
    return buf;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void sample(std::string& out, const char* name, const std::string& labels, double value) {
    out += name;
    if (!labels.empty()) out += "{" + labels + "}";
    out += " " + number(value) + "\n";
}

}  // namespace

std::string Metrics::route(const std::string& path) {
    static const std::set<std::string> routes = {
        "/v1/chat/completions", "/chat/completions", "/v1/completions", "/completions", "/v1/models", "/models",
        "/v1/embeddings",       "/embeddings",       "/tokenize",       "/detokenize",  "/health",    "/metrics", "-"};
    if (routes.count(path)) return path;
    if (path.rfind("/v1/models/", 0) == 0) return "/v1/models/{model}";
    if (path.rfind("/models/", 0) == 0) return "/models/{model}";
    return "other";
}

void Metrics::request(const std::string& path, int status, double seconds) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string r = route(path);
    ++requests_[{r, status}];
    request_seconds_[r] += seconds;
}

void Metrics::generation(int prompt_tokens, int prompt_evaluated, int generated_tokens, double prompt_seconds,
                         double decode_seconds) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++generations_;
    prompt_tokens_ += uint64_t(prompt_tokens);
    prompt_evaluated_ += uint64_t(prompt_evaluated);
    generated_tokens_ += uint64_t(generated_tokens);
    prompt_seconds_ += prompt_seconds;
    decode_seconds_ += decode_seconds;
}

void Metrics::embedding(int tokens) {
    std::lock_guard<std::mutex> lock(mutex_);
    embedded_tokens_ += uint64_t(tokens);
}

std::string Metrics::text(const Gauges& g) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string out;
    header(out, "vkllm_requests_total", "counter", "Requests answered, by route and HTTP status.");
    for (const auto& [key, n] : requests_)
        sample(out, "vkllm_requests_total", "route=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"",
               double(n));
    header(out, "vkllm_request_seconds_total", "counter",
           "Seconds from a request's first byte to the end of its answer, summed by route.");
    for (const auto& [r, s] : request_seconds_) sample(out, "vkllm_request_seconds_total", "route=\"" + r + "\"", s);
    header(out, "vkllm_generations_total", "counter", "Generations finished (cancelled ones included).");
    sample(out, "vkllm_generations_total", "", double(generations_));
    header(out, "vkllm_prompt_tokens_total", "counter", "Prompt tokens of the generations.");
    sample(out, "vkllm_prompt_tokens_total", "", double(prompt_tokens_));
    header(out, "vkllm_prompt_tokens_evaluated_total", "counter",
           "Prompt tokens evaluated (the rest came from the KV cache).");
    sample(out, "vkllm_prompt_tokens_evaluated_total", "", double(prompt_evaluated_));
    header(out, "vkllm_generated_tokens_total", "counter", "Tokens generated.");
    sample(out, "vkllm_generated_tokens_total", "", double(generated_tokens_));
    header(out, "vkllm_embedded_tokens_total", "counter", "Tokens of embedded inputs.");
    sample(out, "vkllm_embedded_tokens_total", "", double(embedded_tokens_));
    header(out, "vkllm_prompt_seconds_total", "counter", "Seconds evaluating prompts.");
    sample(out, "vkllm_prompt_seconds_total", "", prompt_seconds_);
    header(out, "vkllm_decode_seconds_total", "counter", "Seconds generating tokens.");
    sample(out, "vkllm_decode_seconds_total", "", decode_seconds_);
    header(out, "vkllm_seconds_per_token", "gauge", "Decode seconds per generated token since the start.");
    sample(out, "vkllm_seconds_per_token", "", generated_tokens_ ? decode_seconds_ / double(generated_tokens_) : 0.0);
    header(out, "vkllm_queue_depth", "gauge", "Requests waiting for the worker.");
    sample(out, "vkllm_queue_depth", "", double(g.waiting));
    header(out, "vkllm_busy", "gauge", "1 while a request is generated or embedded, 0 when idle.");
    sample(out, "vkllm_busy", "", g.busy ? 1.0 : 0.0);
    header(out, "vkllm_slots", "gauge", "Generations that can run at once (serve --parallel).");
    sample(out, "vkllm_slots", "", double(g.slots));
    header(out, "vkllm_slots_busy", "gauge", "Slots generating now.");
    sample(out, "vkllm_slots_busy", "", double(g.slots_busy));
    header(out, "vkllm_busy_seconds_total", "counter", "Seconds the worker spent on requests.");
    sample(out, "vkllm_busy_seconds_total", "", g.busy_seconds);
    header(out, "vkllm_connections", "gauge", "Open HTTP connections.");
    sample(out, "vkllm_connections", "", double(g.connections));
    return out;
}

}  // namespace vkllm::cli::server
