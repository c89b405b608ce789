// vkllm bench: prompt-processing and decode throughput, like llama-bench (pp N / tg N), plus
// the memory bandwidth decode achieves and GPU time per op family from timestamp queries.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

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
    "vkllm bench [-m MODEL.gguf] [-p 512] [-n 128] [-d 0] [-r 3] [-b 512] [--device D] [--json]\n"
    "            [--cache-type auto|f16|f32|q8_0]\n"
    "  -b N: tokens per forward pass of the prompt (llama-bench's default micro-batch, 512)\n"
    "  -d N: measure with N tokens of context already evaluated (llama-bench's depth), filled\n"
    "        by one N-token prompt pass (not timed); each prompt repeat starts at the depth,\n"
    "        the decode repeats run one after another from it\n"
    "  without -m: the small model built into vkllm (`vkllm inspect` shows it)";

// The precision the JSON has always had (3 decimals, 4 for milliseconds), not float noise.
double rounded(double v, double scale) { return std::round(v * scale) / scale; }

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

int run(const Args& args) {
    Options o(args, {"-m", "-p", "-n", "-d", "-r", "-b", "--device", "--cache-type"}, {"--json"});
    const int n_prompt = int(o.integer("-p", 512, 0, 1 << 24));
    const int n_gen = int(o.integer("-n", 128, 0, 1 << 24));
    const int depth = int(o.integer("-d", 0, 0, 1 << 24));
    const KvCacheType kv_cache = cache_type(o);
    const int reps = int(o.integer("-r", 3, 1, 1000));
    // llama-bench evaluates pp512 in one pass (its n_ubatch is 512): so does bench by default.
    const int n_batch = int(o.integer("-b", 512, 1));
    ModelOptions mo;
    mo.device = o.str("--device");
    auto model = Model::load(*open_model_file(o), mo);
    print_warnings(model->warnings());
    const ModelInfo& info = model->info();
    const std::string& model_name = info.source;

    // The prompt repeats each start at the depth. The decode repeats start each from an empty
    // context, or at a depth one after another (each n_gen + 1 tokens further than the last, a
    // small change next to the depth), so the context is filled once, not once per repeat.
    const int64_t decode_span = int64_t(depth > 0 ? reps : 1) * (n_gen + 1) + 1;
    const int64_t n_ctx = depth + std::max<int64_t>({1, n_prompt, decode_span});
    if (n_ctx > (1 << 30))
        throw std::runtime_error("bench's context -d + max(-p, -r x (-n + 1) + 1) = " + std::to_string(n_ctx) +
                                 " tokens is too long: use a smaller -d, -p, -n or -r");
    SessionOptions so;
    so.n_ctx = int(n_ctx);
    so.n_batch = n_batch;
    so.kv_cache = kv_cache;
    // The engine's context errors suggest -c, which bench does not take: its context comes from -d, -p, -n, -r.
    std::unique_ptr<Session> made;
    try {
        made = std::make_unique<Session>(*model, so);
    } catch (const std::exception& e) {
        throw std::runtime_error(std::string(e.what()) + "\n  (bench's context is -d + max(-p, -r x (-n + 1) + 1) = " +
                                 std::to_string(so.n_ctx) + " tokens: use a smaller -d, -p, -n or -r)");
    }
    Session& session = *made;
    // Random tokens, as llama-bench uses: the speed does not depend on the text.
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int32_t> pick(0, model->n_vocab() - 1);
    std::vector<int32_t> prompt(static_cast<size_t>(n_prompt));
    for (auto& t : prompt) t = pick(rng);
    std::vector<int32_t> context(static_cast<size_t>(depth));
    for (auto& t : context) t = pick(rng);
    // Back to the depth (a no-op there; a recurrent model restores the state snapshot taken there).
    auto to_depth = [&] {
        if (session.n_past() != depth) session.truncate(depth);
    };

    using clock = std::chrono::steady_clock;
    std::vector<double> pp, tg;
    // One warm-up pass compiles pipelines and faults in memory before anything is timed.
    session.eval({pick(rng)});
    session.reset();
    if (depth > 0) session.eval(context);  // not timed
    for (int r = 0; r < reps && n_prompt > 0; ++r) {
        to_depth();
        auto t0 = clock::now();
        session.eval(prompt);
        pp.push_back(n_prompt / std::chrono::duration<double>(clock::now() - t0).count());
    }
    if (n_gen > 0) to_depth();
    for (int r = 0; r < reps && n_gen > 0; ++r) {
        if (depth == 0) session.reset();
        session.eval({pick(rng)});
        auto t0 = clock::now();
        for (int i = 0; i < n_gen; ++i) session.eval({pick(rng)});
        tg.push_back(n_gen / std::chrono::duration<double>(clock::now() - t0).count());
    }
    ProbeConfig timing;
    timing.timings = true;
    // One more decode step with timestamps on, for the per-op breakdown (at the depth).
    // At a depth it follows the last decode (about the depth) rather than going back.
    if (n_gen == 0 || depth == 0) to_depth();
    session.set_probes(timing);
    session.eval({pick(rng)});
    const std::vector<OpTiming> ops = timings_by_op(session.probes().timings);
    // One more prompt pass with timestamps on, for the prompt's per-op breakdown (from the depth; last, so
    // the decode step above keeps its place).
    std::vector<OpTiming> prompt_ops;
    if (n_prompt > 0) {
        to_depth();
        session.set_probes(timing);
        session.eval(prompt);
        prompt_ops = timings_by_op(session.probes().timings);
        session.set_probes(ProbeConfig{});
    }

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
        j["n_depth"] = depth;
        j["repeats"] = reps;
        j["cache_type"] = kv_cache_type_name(session.kv_cache_usage().type);
        j["prompt_tps"] = rounded(pp_tps, 1e3);
        j["decode_tps"] = rounded(tg_tps, 1e3);
        j["decode_gbs"] = rounded(gbs, 1e3);
        j["ops_ms"] = nlohmann::ordered_json::object();
        for (const OpTiming& t : ops) j["ops_ms"][t.op] = rounded(t.ms, 1e4);
        j["prompt_ops_ms"] = nlohmann::ordered_json::object();
        for (const OpTiming& t : prompt_ops) j["prompt_ops_ms"][t.op] = rounded(t.ms, 1e4);
        std::printf("%s\n", app::json_text(j).c_str());
    } else {
        std::printf("model   %s (%s, %.2f MiB of weights)\n", model_name.c_str(), info.arch.c_str(), double(bytes) / (1 << 20));
        std::printf("device  %s\n", dev.c_str());
        std::printf("cache   %s\n", kv_cache_type_name(session.kv_cache_usage().type));
        // llama-bench's names: "pp512 @ d1024" when measured at a depth.
        const std::string at = depth > 0 ? " @ d" + std::to_string(depth) : "";
        if (n_prompt > 0)
            std::printf("%-7s %10.2f tokens/s  (median of %d)\n", ("pp" + std::to_string(n_prompt) + at).c_str(), pp_tps,
                        reps);
        if (n_gen > 0)
            std::printf("%-7s %10.2f tokens/s  (median of %d), %.2f GB/s of weights read\n",
                        ("tg" + std::to_string(n_gen) + at).c_str(), tg_tps, reps, gbs);
        if (!prompt_ops.empty()) {
            std::printf("GPU time of one %d-token prompt pass by op:\n", n_prompt);
            for (const auto& t : prompt_ops) std::printf("  %-10s %9.4f ms  (%d)\n", t.op.c_str(), t.ms, t.count);
        }
        std::printf("GPU time of one decode step by op:\n");
        for (const auto& t : ops) std::printf("  %-10s %9.4f ms  (%d)\n", t.op.c_str(), t.ms, t.count);
    }
    return 0;
}

}  // namespace

int cmd_bench(const Args& args) { return with_usage(kUsage, run, args); }

}  // namespace vkllm::cli
