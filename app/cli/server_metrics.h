// `vkllm serve`'s counters for GET /metrics, in Prometheus' text format (version 0.0.4):
// requests by route and status, prompt and generated tokens, the seconds they took, and the
// gauges the caller reads at scrape time (queue depth, busy, connections).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace vkllm::cli::server {

class Metrics {
public:
    // One answered request. `path` is reduced to a known route ("other" for any other path, "-"
    // for a request refused before it was read) so that the labels stay few.
    void request(const std::string& path, int status, double seconds);
    // One finished generation: its tokens and the engine's timings.
    void generation(int prompt_tokens, int prompt_evaluated, int generated_tokens, double prompt_seconds,
                    double decode_seconds);
    void embedding(int tokens);

    struct Gauges {
        size_t waiting = 0;      // requests in the queue
        bool busy = false;       // a request is being generated or embedded
        double busy_seconds = 0; // time spent generating or embedding so far
        size_t connections = 0;  // open connections
        size_t slots = 1;        // generations that can run at once (serve --parallel)
        size_t slots_busy = 0;   // of which running
    };
    // The whole exposition text.
    std::string text(const Gauges& gauges) const;

    // The route label for a path.
    static std::string route(const std::string& path);

private:
    mutable std::mutex mutex_;
    std::map<std::pair<std::string, int>, uint64_t> requests_;
    std::map<std::string, double> request_seconds_;
    uint64_t prompt_tokens_ = 0, prompt_evaluated_ = 0, generated_tokens_ = 0, embedded_tokens_ = 0;
    uint64_t generations_ = 0;
    double prompt_seconds_ = 0, decode_seconds_ = 0;
};

}  // namespace vkllm::cli::server
