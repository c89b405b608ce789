// vkllm run: generate text, streaming it to stdout as the tokens detokenise.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <utility>

#include "activation_report.h"
#include "gpu/device.h"
#include "model/spec.h"
#include "model_file.h"
#include "options.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"
#include "model/model_internal.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm::cli {
namespace {

const char* kUsage =
    "vkllm run [-m MODEL.gguf] [-p PROMPT] [-n N] [-c CTX] [--temp T] [--top-k K] [--top-p P] [--min-p M]\n"
    "          [--repeat-penalty R] [--repeat-last-n N] [--presence-penalty P] [--frequency-penalty F]\n"
    "          [--seed S] [--device D] [--timings] [--expert-stats] [--activations]\n"
    "  --activations: after the prompt, the residual stream's largest value per layer (token, channel,\n"
    "                 ratio to the median), massive activations flagged (Sun et al. 2024)\n"
    "  without -m: the small model built into vkllm (`vkllm inspect` shows it)";

// Per MoE layer: how evenly the router spread the (token, slot) pairs over the experts.
void print_expert_stats(const char* phase, const std::vector<ExpertLoad>& loads) {
    if (loads.empty()) return;
    std::fprintf(stderr, "vkllm: expert load (%s): layer  max  mean  cv  idle/experts\n", phase);
    for (const ExpertLoad& e : loads) {
        const size_t n = e.tokens.size();
        double sum = 0, sq = 0, mx = 0;
        int idle = 0;
        for (float t : e.tokens) {
            sum += t;
            sq += double(t) * t;
            mx = std::max(mx, double(t));
            idle += t == 0;
        }
        const double mean = sum / double(n);
        const double cv = mean > 0 ? std::sqrt(std::max(0.0, sq / double(n) - mean * mean)) / mean : 0.0;
        std::fprintf(stderr, "  %5d  %5.0f  %6.2f  %5.2f  %d/%zu\n", e.layer, mx, mean, cv, idle, n);
    }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int run(const Args& args) {
    Options o(args,
              {"-m", "-p", "-n", "-c", "--temp", "--top-k", "--top-p", "--min-p", "--repeat-penalty",
               "--repeat-last-n", "--presence-penalty", "--frequency-penalty", "--seed", "--device", "-b"},
              {"--timings", "--expert-stats", "--activations"});
    const int n_predict = int(o.integer("-n", 128));
    if (n_predict < 0) throw UsageError("-n must be >= 0");
    sampling::SamplerParams sp;
    sp.temperature = float(o.real("--temp", 0.8));
    sp.top_k = int(o.integer("--top-k", 40));
    sp.top_p = float(o.real("--top-p", 0.95));
    sp.min_p = float(o.real("--min-p", 0.05));
    sp.repeat_penalty = float(o.real("--repeat-penalty", 1.0));
    sp.repeat_last_n = int(o.integer("--repeat-last-n", 64));
    sp.presence_penalty = float(o.real("--presence-penalty", 0.0));
    sp.frequency_penalty = float(o.real("--frequency-penalty", 0.0));
    sp.seed = o.has("--seed") ? uint64_t(o.integer("--seed", 0)) : uint64_t(std::random_device{}());

    ModelOptions mo;
    mo.device = o.str("--device");
    auto file = open_model_file(o);
    if (!o.has("-m")) std::fprintf(stderr, "vkllm: no -m given; using %s\n", builtin_model_description().c_str());
    auto model = detail::ModelInternals::load(std::move(file), mo);
    const auto& tok = model->internals().tokenizer();
    SessionOptions so;
    so.n_ctx = int(o.integer("-c", 0));
    so.n_batch = int(o.integer("-b", 256));
    so.probes.timings = o.has("--timings");
    so.probes.expert_load = o.has("--expert-stats");
    so.probes.residual_stats = o.has("--activations");
    Session session(*model, so);

    const std::string prompt = o.str("-p", "");
    std::vector<int32_t> tokens = tok.encode(prompt, /*add_special=*/true, /*parse_special=*/false);
    if (tokens.empty()) throw UsageError("the prompt is empty and the model adds no BOS token; give a prompt with -p");
    if (int(tokens.size()) > session.n_ctx())
        throw ContextOverflow("the prompt is " + std::to_string(tokens.size()) + " tokens, longer than the context of " +
                              std::to_string(session.n_ctx()) + " tokens; use a larger context (-c) or a shorter prompt");

    std::fprintf(stderr, "vkllm: %s on %s, %d layers, %.1f MiB of weights, KV cache %.1f MiB (%d tokens)\n",
                 model->internals().spec().arch.c_str(), model->internals().context().caps().name.c_str(), model->internals().spec().n_layer,
                 double(model->weight_bytes()) / (1 << 20), double(session.kv_cache_bytes()) / (1 << 20),
                 session.n_ctx());
    const auto kv = session.kv_cache_usage();
    std::fprintf(stderr, "vkllm: KV cache: %d global layers %.2f MiB", kv.global_layers, double(kv.global_bytes) / (1 << 20));
    if (kv.local_layers)
        std::fprintf(stderr, ", %d sliding-window layers %.2f MiB (ring buffers)", kv.local_layers,
                     double(kv.local_bytes) / (1 << 20));
    std::fprintf(stderr, "; %.1f KiB per token of context in global layers\n",
                 kv.global_layers ? double(kv.global_bytes) / session.n_ctx() / 1024.0 : 0.0);
    if (const auto& a0 = model->internals().spec().layers[0].attn; a0.mla.kv_lora_rank > 0) {
        const auto& mla = a0.mla;
        const double latent = double(mla.kv_lora_rank + mla.qk_rope + mla.kv_lora_rank) * 4;
        const double per_head = double(a0.n_head) * (mla.qk_nope + mla.qk_rope + mla.v_head) * 4;
        std::fprintf(stderr, "vkllm: MLA: %.0f bytes per token per layer in the latent cache, against %.0f for the "
                             "same model's per-head K/V (%.1fx smaller)\n", latent, per_head, per_head / latent);
    }
    std::fprintf(stderr, "vkllm: sampling: temp %.2f, top-k %d, top-p %.2f, min-p %.2f, seed %llu\n",
                 double(sp.temperature), sp.top_k, double(sp.top_p), double(sp.min_p),
                 static_cast<unsigned long long>(sp.seed));
    std::fputs(prompt.c_str(), stdout);
    std::fflush(stdout);

    sampling::Sampler sampler(sp);
    for (int32_t t : tokens) sampler.accept(t);
    auto t0 = std::chrono::steady_clock::now();
    std::vector<float> logits = session.eval(tokens);
    const double prompt_s = seconds_since(t0);
    std::vector<OpTiming> timings = session.probes().timings;
    // The residual probe covers the prompt's last forward pass (its last batch of -b tokens);
    // reported after the text, and switched off for the decode steps.
    const std::vector<ResidualStat> prompt_residual = session.probes().residual;
    const size_t last_pass = (tokens.size() - 1) % size_t(session.n_batch()) + 1;
    if (so.probes.residual_stats) {
        so.probes.residual_stats = false;
        session.set_probes(so.probes);
    }

    tokenizer::Utf8Stream text;
    int generated = 0;
    auto t1 = std::chrono::steady_clock::now();
    while (generated < n_predict) {
        int32_t next = sampler.sample(logits.data(), int32_t(logits.size()));
        sampler.accept(next);
        ++generated;
        if (tok.is_eog(next)) break;
        std::fputs(text.push(tok.token_to_piece(next)).c_str(), stdout);
        std::fflush(stdout);
        if (generated == n_predict) break;
        if (session.n_past() >= session.n_ctx()) {
            std::fprintf(stderr, "\nvkllm: the context of %d tokens is full; stopping\n", session.n_ctx());
            break;
        }
        logits = session.eval({next});
        for (const auto& t : session.probes().timings) {
            auto it = std::find_if(timings.begin(), timings.end(), [&](const OpTiming& x) { return x.op == t.op; });
            if (it == timings.end()) timings.push_back(t);
            else it->ms += t.ms, it->count += t.count;
        }
    }
    std::fputs(text.flush().c_str(), stdout);
    std::fputs("\n", stdout);
    std::fflush(stdout);
    const double decode_s = seconds_since(t1);

    if (!prompt_residual.empty())
        print_activation_report(stderr, prompt_residual, std::vector<int32_t>(tokens.end() - long(last_pass), tokens.end()),
                                int(tokens.size() - last_pass), tok);
    print_expert_stats("prompt", session.probes().expert_load_prefill);
    print_expert_stats("decode", session.probes().expert_load_decode);
    if (so.probes.timings) {
        std::fprintf(stderr, "vkllm: GPU time by op (prompt + decode):\n");
        for (const auto& t : timings)
            std::fprintf(stderr, "  %-10s %9.3f ms  %6d dispatch groups\n", t.op.c_str(), t.ms, t.count);
    }
    std::fprintf(stderr, "vkllm: prompt %zu tokens in %.3f s (%.2f tokens/s); decode %d tokens in %.3f s (%.2f tokens/s)\n",
                 tokens.size(), prompt_s, double(tokens.size()) / prompt_s, generated, decode_s,
                 generated > 0 ? double(generated) / decode_s : 0.0);
    return 0;
}

}  // namespace

int cmd_run(const Args& args) { return with_usage(kUsage, run, args); }

}  // namespace vkllm::cli
