// vkllm bench: prompt-processing and decode throughput, like llama-bench (pp N / tg N), plus
// the memory bandwidth decode achieves and GPU time per op family from timestamp queries.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>

#include <nlohmann/json.hpp>

#include "json_text.h"
#include "model_file.h"
#include "options.h"
#include "vkllm/gguf.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm::cli {
namespace {

const char* kUsage =
    "vkllm bench [-m MODEL.gguf] [-p 512] [-n 128] [-r 3] [-b 256] [--device D] [--json]\n"
    "            [--cache-type auto|f16|f32|q8_0]\n"
    "  without -m: the small model built into vkllm (`vkllm inspect` shows it)";

// The precision the JSON has always had (3 decimals, 4 for milliseconds), not float noise.
double rounded(double v, double scale) { return std::round(v * scale) / scale; }

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

int run(const Args& args) {
    Options o(args, {"-m", "-p", "-n", "-r", "-b", "--device", "--cache-type"}, {"--json"});
    // The context is -p + -n + 1 tokens: each is capped so the sum stays an int.
    const int n_prompt = int(o.integer("-p", 512, 0, 1 << 24));
    const int n_gen = int(o.integer("-n", 128, 0, 1 << 24));
    const KvCacheType kv_cache = cache_type(o);
    const int reps = int(o.integer("-r", 3, 1, 1000));
    const int n_batch = int(o.integer("-b", 256, 1));
    ModelOptions mo;
    mo.device = o.str("--device");
    auto model = Model::load(*open_model_file(o), mo);
    print_warnings(model->warnings());
    const ModelInfo& info = model->info();
    const std::string& model_name = info.source;

    SessionOptions so;
    so.n_ctx = std::max(1, n_prompt + n_gen + 1);
    so.n_batch = n_batch;
    so.kv_cache = kv_cache;
    // The engine's context errors suggest -c, which bench does not take: its context is -p + -n + 1.
    std::unique_ptr<Session> made;
    try {
        made = std::make_unique<Session>(*model, so);
    } catch (const std::exception& e) {
        throw std::runtime_error(std::string(e.what()) + "\n  (bench's context is -p + -n + 1 = " +
                                 std::to_string(so.n_ctx) + " tokens: use a smaller -p or -n)");
    }
    Session& session = *made;
    // Random tokens, as llama-bench uses: the speed does not depend on the text.
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int32_t> pick(0, model->n_vocab() - 1);
    std::vector<int32_t> prompt(static_cast<size_t>(n_prompt));
    for (auto& t : prompt) t = pick(rng);

    using clock = std::chrono::steady_clock;
    std::vector<double> pp, tg;
    // One warm-up pass compiles pipelines and faults in memory before anything is timed.
    session.eval({pick(rng)});
    for (int r = 0; r < reps; ++r) {
        session.reset();
        if (n_prompt > 0) {
            auto t0 = clock::now();
            session.eval(prompt);
            pp.push_back(n_prompt / std::chrono::duration<double>(clock::now() - t0).count());
        }
        if (n_gen > 0) {
            session.reset();
            session.eval({pick(rng)});
            auto t0 = clock::now();
            for (int i = 0; i < n_gen; ++i) session.eval({pick(rng)});
            tg.push_back(n_gen / std::chrono::duration<double>(clock::now() - t0).count());
        }
    }
    // One more decode step with timestamps on, for the per-op breakdown.
    ProbeConfig timing;
    timing.timings = true;
    session.reset();
    session.set_probes(timing);
    session.eval({pick(rng)});
    const std::vector<OpTiming> ops = timings_by_op(session.probes().timings);

    const double pp_tps = median(pp), tg_tps = median(tg);
    const uint64_t bytes = model->weight_bytes();
    const double gbs = tg_tps * double(bytes) / 1e9;  // each decode step reads every weight once
    const std::string& dev = model->device().name;
    if (o.has("--json")) {
        nlohmann::ordered_json j;
        j["model"] = model_name;
        j["device"] = dev;
        j["model_bytes"] = bytes;
        j["n_prompt"] = n_prompt;
        j["n_gen"] = n_gen;
        j["repeats"] = reps;
        j["cache_type"] = kv_cache_type_name(session.kv_cache_usage().type);
        j["prompt_tps"] = rounded(pp_tps, 1e3);
        j["decode_tps"] = rounded(tg_tps, 1e3);
        j["decode_gbs"] = rounded(gbs, 1e3);
        j["ops_ms"] = nlohmann::ordered_json::object();
        for (const OpTiming& t : ops) j["ops_ms"][t.op] = rounded(t.ms, 1e4);
        std::printf("%s\n", app::json_text(j).c_str());
    } else {
        std::printf("model   %s (%s, %.2f MiB of weights)\n", model_name.c_str(), info.arch.c_str(), double(bytes) / (1 << 20));
        std::printf("device  %s\n", dev.c_str());
        std::printf("cache   %s\n", kv_cache_type_name(session.kv_cache_usage().type));
        if (n_prompt > 0) std::printf("pp%-5d %10.2f tokens/s  (median of %d)\n", n_prompt, pp_tps, reps);
        if (n_gen > 0)
            std::printf("tg%-5d %10.2f tokens/s  (median of %d), %.2f GB/s of weights read\n", n_gen, tg_tps, reps, gbs);
        std::printf("GPU time of one decode step by op:\n");
        for (const auto& t : ops) std::printf("  %-10s %9.4f ms  (%d)\n", t.op.c_str(), t.ms, t.count);
    }
    return 0;
}

}  // namespace

int cmd_bench(const Args& args) { return with_usage(kUsage, run, args); }

}  // namespace vkllm::cli
