// Soak test of the public API (vkllm::vkllm only): long decoding in one session, with probes
// off and on, then many sessions created and destroyed, sampling memory as it goes.
//
//   vkllm-soak MODEL.gguf [--steps N] [--sessions N] [--every N]
//
// Decode phases: one token per eval(), greedy on the returned logits, in one Session. When the
// context is full the session is truncated to half of it (Session::truncate) and decoding goes
// on from there, so any number of steps fits. Session phase: each session evaluates a short
// prompt and decodes 8 tokens, then is destroyed.
//
// Memory: resident set size from /proc/self/statm (on a CPU Vulkan driver such as lavapipe this
// includes the "GPU" memory too) and the engine's own report of GPU bytes (weights, KV cache,
// scratch and probe buffers). Prints a table row every --every steps (or sessions) and a verdict
// line: flat when the resident size at the end of a phase is within 5% (and 16 MiB) of its
// value after the phase's first sample (the warm-up: pipelines, first allocations).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "vkllm/model.h"
#include "vkllm/session.h"

namespace {

uint64_t resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    uint64_t size = 0, resident = 0;
    statm >> size >> resident;
    return resident * uint64_t(sysconf(_SC_PAGESIZE));
}

double mib(uint64_t bytes) { return double(bytes) / (1 << 20); }

int32_t argmax(const std::vector<float>& logits) {
    return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

struct Phase {
    std::string name;
    uint64_t first_rss = 0, last_rss = 0, max_rss = 0;
    uint64_t first_gpu = 0, last_gpu = 0;
    int samples = 0;

    void sample(int step, uint64_t gpu, double seconds) {
        const uint64_t rss = resident_bytes();
        if (samples++ == 0) first_rss = rss, first_gpu = gpu;
        last_rss = rss, last_gpu = gpu;
        max_rss = std::max(max_rss, rss);
        std::printf("| %s | %d | %.1f | %.2f | %.1f |\n", name.c_str(), step, mib(rss), mib(gpu), seconds);
        std::fflush(stdout);
    }
    bool flat() const {
        const uint64_t grown = last_rss > first_rss ? last_rss - first_rss : 0;
        return grown <= std::max<uint64_t>(first_rss / 20, 16u << 20) && last_gpu == first_gpu;
    }
    void verdict() const {
        std::printf("%s: resident %.1f -> %.1f MiB (max %.1f), engine GPU %.2f -> %.2f MiB: %s\n", name.c_str(),
                    mib(first_rss), mib(last_rss), mib(max_rss), mib(first_gpu), mib(last_gpu),
                    flat() ? "flat" : "GROWING");
    }
};

uint64_t gpu_bytes(const vkllm::Model& model, const vkllm::Session& s) {
    return model.weight_bytes() + s.kv_cache_bytes() + s.scratch_bytes() + s.probe_bytes();
}

Phase decode(const vkllm::Model& model, const char* name, const vkllm::ProbeConfig& probes, int steps, int every) {
    vkllm::SessionOptions so;
    so.probes = probes;
    vkllm::Session session(model, so);
    Phase phase{name};
    const auto start = std::chrono::steady_clock::now();
    std::vector<float> logits = session.eval(model.tokenize("Once upon a time", true));
    int truncations = 0;
    for (int step = 1; step <= steps; ++step) {
        if (session.n_past() >= session.n_ctx()) {
            session.truncate(session.n_ctx() / 2);
            ++truncations;
        }
        logits = session.eval({argmax(logits)});
        if (step % every == 0 || step == steps)
            phase.sample(step, gpu_bytes(model, session),
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::printf("%s: %d decode steps, context %d, %d truncations to %d tokens\n", name, steps, session.n_ctx(),
                truncations, session.n_ctx() / 2);
    return phase;
}

Phase sessions(const vkllm::Model& model, int count, int every) {
    Phase phase{"sessions"};
    const auto start = std::chrono::steady_clock::now();
    const std::vector<int32_t> prompt = model.tokenize("Once upon a time there was a little", true);
    for (int i = 1; i <= count; ++i) {
        vkllm::SessionOptions so;
        so.n_ctx = 256;
        vkllm::Session session(model, so);
        std::vector<float> logits = session.eval(prompt);
        for (int k = 0; k < 8; ++k) logits = session.eval({argmax(logits)});
        if (i % every == 0 || i == count)
            phase.sample(i, gpu_bytes(model, session),
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return phase;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || argv[1][0] == '-') {
        std::fprintf(stderr, "usage: vkllm-soak MODEL.gguf [--steps N] [--sessions N] [--every N]\n");
        return 2;
    }
    int steps = 10000, count = 200, every = 1000;
    for (int i = 2; i + 1 < argc; i += 2) {
        const int v = std::atoi(argv[i + 1]);
        if (v <= 0) {
            std::fprintf(stderr, "vkllm-soak: %s needs a positive number\n", argv[i]);
            return 2;
        }
        if (!std::strcmp(argv[i], "--steps")) steps = v;
        else if (!std::strcmp(argv[i], "--sessions")) count = v;
        else if (!std::strcmp(argv[i], "--every")) every = v;
        else {
            std::fprintf(stderr, "vkllm-soak: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    try {
        const auto model = vkllm::Model::load(argv[1]);
        const int n_layer = model->info().n_layer;
        std::printf("model: %s (%d layers) on %s\n\n", model->info().name.c_str(), n_layer, model->device().name.c_str());
        std::printf("| phase | step | resident MiB | engine GPU MiB | seconds |\n|---|---|---|---|---|\n");

        vkllm::ProbeConfig probes;
        probes.attention_layers = {0, n_layer - 1};
        probes.residual_stats = true;
        probes.ffn_down = true;
        probes.logit_lens_layers = {n_layer - 1};
        probes.timings = true;
        std::vector<Phase> phases;
        phases.push_back(decode(*model, "decode, probes off", {}, steps, every));
        phases.push_back(decode(*model, "decode, probes on", probes, steps, every));
        phases.push_back(sessions(*model, count, std::max(1, every / 50)));
        std::printf("\n");
        bool flat = true;
        for (const Phase& p : phases) {
            p.verdict();
            flat = flat && p.flat();
        }
        return flat ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vkllm-soak: %s\n", e.what());
        return 1;
    }
}
