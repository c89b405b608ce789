// vkllm run: generate text with Session::generate (or, with --json / --json-schema, generate_json;
// with --grammar, generate_with_grammar),
// streaming it to stdout as it is released.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "activation_report.h"
#include "input_file.h"
#include "interrupt.h"
#include "interventions.h"
#include "json_option.h"
#include "model_file.h"
#include "options.h"
#include "prepare_note.h"
#include "vkllm/generate.h"
#include "vkllm/grammar.h"
#include "vkllm/json_output.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm::cli {
namespace {

const char* kUsage =
    "vkllm run [-m MODEL.gguf] [-p PROMPT | -f FILE] [-n N] [-c CTX] [--temp T] [--top-k K] [--top-p P] [--min-p M]\n"
    "          [--repeat-penalty R] [--repeat-last-n N] [--presence-penalty P] [--frequency-penalty F]\n"
    "          [--seed S] [--logit-bias ID=BIAS,...] [--device D] [--timings] [--expert-stats] [--activations] [--draft MODEL.gguf [--draft-n K]]\n"
    "          [--cache-type auto|f16|f32|q8_0] [--json | --json-schema SCHEMA.json | --grammar FILE.gbnf]\n"
    "          [--zero-weight LAYER:TENSOR:ROW:COL[:EXPERT],...] [--set-activation LAYER:CHANNEL=VALUE|mean,...]\n"
    "          [--effect-text FILE]\n"
    "  --activations: after the prompt, the residual stream's largest value per layer (token, channel,\n"
    "                 ratio to the median), massive activations flagged (Sun et al. 2024)\n"
    "  --zero-weight: sets weight[ROW, COL] of blk.LAYER.TENSOR to 0 (ROW the output channel, as PyTorch's\n"
    "                 down_proj.weight[row, col]; `vkllm inspect --super` finds super weights)\n"
    "  --set-activation: sets residual channel CHANNEL after LAYER (-1: the embeddings) to VALUE, or to its\n"
    "                 running mean over the tokens evaluated, for every token\n"
    "  --effect-text: before generating, those edits judged over FILE's text (up to 128 MiB, from position 0):\n"
    "                 each position's KL(before || after), the text's perplexity before and after and the\n"
    "                 positions that moved most, on stderr\n"
    "  --draft: speculative decoding: MODEL (same tokenizer, smaller) proposes K tokens (default 4) per step,\n"
    "                 the model verifies them in one pass; the output is the same as without a draft\n"
    "  --cache-type: the KV cache's element type (auto, the default: f16 where the device has 16-bit storage,\n"
    "                 else f32; f32: llama.cpp's exact mode; q8_0: 8-bit blocks of 32, rows of whole blocks)\n"
    "  --json, --json-schema: the output is one JSON value: any object (--json), or one the JSON Schema in the\n"
    "                 file allows (the subset of docs/serve.md; a keyword it cannot enforce is refused); stdout\n"
    "                 has the value alone, not the prompt, and generation ends when the value is complete. A value\n"
    "                 that -n or the context cuts short is an error (exit 1); not with --draft\n"
    "  --grammar: the output is text the GBNF grammar in FILE (llama.cpp's format) matches from its root rule;\n"
    "                 stdout has that text alone, and generation ends when nothing more can follow. A bad grammar\n"
    "                 is a usage error naming FILE:LINE:COLUMN; text cut short by -n is an error; not with --draft\n"
    "  --logit-bias: BIAS (in [-100, 100]) added to token ID's logit before sampling, greedy included;\n"
    "                 -100 bans the token\n"
    "  -f FILE: the prompt from a file or pipe, up to 128 MiB (-f -: standard input); --seed -1 (the default):\n"
    "                 a random seed\n"
    "  without -m: the small model built into vkllm (`vkllm inspect` shows it)";

// --logit-bias ID=BIAS,...: the ids and biases, each bias in [-100, 100] (the ids are checked
// against the vocabulary once the model is loaded).
std::map<int32_t, float> parse_logit_bias(const std::string& text) {
    std::map<int32_t, float> out;
    size_t at = 0;
    while (at < text.size()) {
        const size_t end = std::min(text.find(',', at), text.size());
        const std::string item = text.substr(at, end - at);
        const size_t eq = item.find('=');
        char* id_end = nullptr;
        char* bias_end = nullptr;
        const long long id = eq == std::string::npos ? -1 : std::strtoll(item.c_str(), &id_end, 10);
        const float bias = eq == std::string::npos ? 0.0f : std::strtof(item.c_str() + eq + 1, &bias_end);
        if (eq == std::string::npos || eq == 0 || id_end != item.c_str() + eq || id < 0 || id > INT32_MAX ||
            eq + 1 == item.size() || *bias_end != '\0')
            throw UsageError("--logit-bias takes ID=BIAS[,ID=BIAS...] with a token id and a number, got '" + item + "'");
        if (!(bias >= -100.0f && bias <= 100.0f))
            throw UsageError("--logit-bias: the bias of token " + std::to_string(id) + " must be in [-100, 100], got " +
                             item.substr(eq + 1));
        out[int32_t(id)] = bias;
        at = end + 1;
    }
    return out;
}

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

// GPU time summed per op family over every eval of the run (first-seen order).
void add_timings(std::vector<OpTiming>& total, const std::vector<OpTiming>& step) {
    for (const OpTiming& t : step) {
        auto it = std::find_if(total.begin(), total.end(), [&](const OpTiming& x) { return x.op == t.op; });
        if (it == total.end()) total.push_back({t.op, -1, t.ms, t.count});
        else it->ms += t.ms, it->count += t.count;
    }
}

void print_session_header(const Model& model, const Session& session) {
    const ModelInfo& info = model.info();
    std::fprintf(stderr, "vkllm: %s on %s, %d layers, %.1f MiB of weights, KV cache %.1f MiB (%d tokens)\n",
                 info.arch.c_str(), model.device().name.c_str(), info.n_layer, double(model.weight_bytes()) / (1 << 20),
                 double(session.kv_cache_bytes()) / (1 << 20), session.n_ctx());
    const auto kv = session.kv_cache_usage();
    std::fprintf(stderr, "vkllm: KV cache (%s): %d global layers %.2f MiB", kv_cache_type_name(kv.type), kv.global_layers,
                 double(kv.global_bytes) / (1 << 20));
    if (kv.local_layers)
        std::fprintf(stderr, ", %d sliding-window layers %.2f MiB (ring buffers)", kv.local_layers,
                     double(kv.local_bytes) / (1 << 20));
    std::fprintf(stderr, "; %.1f KiB per token of context in global layers\n",
                 kv.global_layers ? double(kv.global_bytes) / session.n_ctx() / 1024.0 : 0.0);
    if (const AttentionInfo& a0 = info.layers[0].attention; a0.kv_lora_rank > 0) {
        const double c = kv.type == KvCacheType::F16 ? 2 : kv.type == KvCacheType::Q8_0 ? 36.0 / 32 : 4;  // per value
        const double latent = double(a0.kv_lora_rank + a0.qk_rope + a0.kv_lora_rank) * c;
        const double per_head = double(a0.n_head) * (a0.qk_nope + a0.qk_rope + a0.v_head) * c;
        std::fprintf(stderr, "vkllm: MLA: %.0f bytes per token per layer in the latent cache, against %.0f for the "
                             "same model's per-head K/V (%.1fx smaller)\n", latent, per_head, per_head / latent);
    }
}

std::string tokens_text(size_t n) { return std::to_string(n) + (n == 1 ? " token" : " tokens"); }

// "prompt 5 tokens in 0.350 s (14.29 tokens/s); decode 4 tokens in ...". The first token comes
// from the prompt's logits, so with fewer than two tokens no decode step ran and no speed is given.
// With a draft model the line ends with how many of its proposals were accepted.
void print_timing_line(const GenerateResult& r, bool drafted) {
    std::string line = "vkllm: prompt " + tokens_text(size_t(r.n_prompt));
    char buf[128];
    if (r.n_prompt_evaluated < r.n_prompt)
        line += " (" + std::to_string(r.n_prompt - r.n_prompt_evaluated) + " from the cache)";
    std::snprintf(buf, sizeof buf, " in %.3f s (%.2f tokens/s)", r.prompt_seconds,
                  r.prompt_seconds > 0 ? double(r.n_prompt_evaluated) / r.prompt_seconds : 0.0);
    line += buf;
    const size_t generated = r.tokens.size();
    if (generated >= 2 && r.decode_seconds > 0) {
        std::snprintf(buf, sizeof buf, " in %.3f s (%.2f tokens/s)", r.decode_seconds,
                      double(generated) / r.decode_seconds);
        line += "; decode " + tokens_text(generated) + buf;
    } else {
        line += "; " + tokens_text(generated) + " generated";
    }
    if (drafted) {
        std::snprintf(buf, sizeof buf, "; draft: %.0f%% of %d proposed tokens accepted",
                      r.draft_proposed > 0 ? 100.0 * r.draft_accepted / r.draft_proposed : 0.0, r.draft_proposed);
        line += buf;
    }
    std::fprintf(stderr, "%s\n", line.c_str());
}

int run(const Args& args) {
    Options o(args,
              {"-m", "-p", "-n", "-c", "--temp", "--top-k", "--top-p", "--min-p", "--repeat-penalty",
               "--repeat-last-n", "--presence-penalty", "--frequency-penalty", "--seed", "--device", "-b",
               "--zero-weight", "--set-activation", "-f", "--draft", "--draft-n", "--cache-type", "--json-schema",
               "--grammar", "--logit-bias", "--effect-text"},
              {"--timings", "--expert-stats", "--activations", "--json"});
    GenerateOptions go;
    // Every number is range-checked here, before the model loads (a usage error, exit 2).
    go.max_tokens = int(o.integer("-n", 128, 0));
    go.sampler = sampler_params(o);
    if (o.has("--logit-bias")) go.sampler.logit_bias = parse_logit_bias(o.str("--logit-bias"));
    const SamplerParams& sp = go.sampler;
    if (o.has("--draft-n") && !o.has("--draft")) throw UsageError("--draft-n needs --draft MODEL");
    go.draft.n_draft = int(o.integer("--draft-n", 4, 1, 64));
    // The schema is read and compiled before the model loads: a bad one is a usage error.
    const std::optional<Grammar> gbnf = gbnf_grammar_option(o);  // first: it refuses --json and --json-schema
    if (gbnf && o.has("--draft")) throw UsageError("--grammar does not combine with --draft");
    const std::optional<JsonGrammar> grammar = json_grammar_option(o);
    if (grammar && o.has("--draft")) throw UsageError("--json and --json-schema do not combine with --draft");
    const bool constrained = grammar || gbnf;

    SessionOptions so;
    so.n_ctx = int(o.integer("-c", 0, 0));  // 0: the model's trained context, at most 4096
    so.n_batch = int(o.integer("-b", 256, 1));
    so.kv_cache = cache_type(o);

    ModelOptions mo;
    mo.device = o.str("--device");
    auto file = open_model_file(o);
    if (!o.has("-m")) std::fprintf(stderr, "vkllm: no -m given; using %s\n", builtin_model_description().c_str());
    auto model = Model::load(*file, mo);
    print_warnings(model->warnings());
    if (!sp.logit_bias.empty() && sp.logit_bias.rbegin()->first >= model->n_vocab())
        throw UsageError("--logit-bias: token " + std::to_string(sp.logit_bias.rbegin()->first) +
                         " is outside the vocabulary (" + std::to_string(model->n_vocab()) + " tokens)");
    for (const WeightRef& w : parse_zero_weights(o.str("--zero-weight"))) {
        const float old = model->set_weight(w, 0.0f);  // std::invalid_argument names what is out of range
        std::fprintf(stderr, "vkllm: zeroed layer %d %s[%lld, %lld]%s (was %g)\n", w.layer, w.tensor.c_str(),
                     static_cast<long long>(w.row), static_cast<long long>(w.col),
                     w.expert >= 0 ? (" of expert " + std::to_string(w.expert)).c_str() : "", double(old));
    }
    so.probes.timings = o.has("--timings");
    so.probes.expert_load = o.has("--expert-stats");
    so.probes.residual_stats = o.has("--activations");
    Session session(*model, so);
    // The draft: on the same device, with the same context, its vocabulary checked before any work.
    std::unique_ptr<Model> draft_model;
    std::unique_ptr<Session> draft_session;
    if (o.has("--draft")) {
        draft_model = Model::load(o.str("--draft"), mo);
        check_draft_vocabulary(*model, *draft_model);
        SessionOptions dso;
        dso.n_ctx = session.n_ctx();
        dso.n_batch = so.n_batch;
        dso.kv_cache = so.kv_cache;
        draft_session = std::make_unique<Session>(*draft_model, dso);
        go.draft.session = draft_session.get();
    }
    const std::vector<ResidualEdit> residual_edits = parse_set_activations(o.str("--set-activation"));
    if (o.has("--set-activation")) session.set_residual_edits(residual_edits);
    if (o.has("--effect-text")) {
        const std::string path = o.str("--effect-text");
        std::vector<int32_t> effect_tokens;
        const app::TextEffect e = judge_over_text(*model, app::read_input(path, app::kPromptFileMax, "text file"),
                                                  parse_zero_weights(o.str("--zero-weight")), residual_edits, so,
                                                  &effect_tokens);
        print_effect(stderr, *model, effect_tokens, e, path);
    }

    const std::string prompt = prompt_text(o).value_or("");
    const std::vector<int32_t> tokens = model->tokenize(prompt, /*add_special=*/true);
    if (tokens.empty()) throw UsageError("the prompt is empty and the model adds no BOS token; give a prompt with -p or -f");
    if (int(tokens.size()) > session.n_ctx())
        throw ContextOverflow("the prompt is " + std::to_string(tokens.size()) + " tokens, longer than the context of " +
                              std::to_string(session.n_ctx()) + " tokens; use a larger context (-c) or a shorter prompt");

    print_session_header(*model, session);
    if (const int trained = model->info().n_ctx_train; trained > 0 && session.n_ctx() > trained)
        std::fprintf(stderr, "vkllm: warning: the context of %d tokens is longer than the %d the model was trained "
                             "with; past %d tokens its output may degrade\n", session.n_ctx(), trained, trained);
    std::fprintf(stderr, "vkllm: sampling: temp %.2f, top-k %d, top-p %.2f, min-p %.2f, seed %llu\n",
                 double(sp.temperature), sp.top_k, double(sp.top_p), double(sp.min_p),
                 static_cast<unsigned long long>(sp.seed));
    if (draft_model)
        std::fprintf(stderr, "vkllm: draft: %s, %.1f MiB of weights, %d tokens proposed per step\n",
                     draft_model->info().arch.c_str(), double(draft_model->weight_bytes()) / (1 << 20),
                     go.draft.n_draft);
    // The shaders the prompt and the decode steps need, compiled before the first token (on a
    // fresh machine the driver compiles each one at its first use, seconds apiece on lavapipe).
    Prepared prepared = prepare_with_note(session, int(tokens.size()));
    if (draft_session) {
        const Prepared d = prepare_with_note(*draft_session, int(tokens.size()));
        prepared.compiled += d.compiled;
        prepared.seconds += d.seconds;
    }
    // JSON output: stdout has the value alone, so that it can be piped to a JSON reader.
    std::optional<TokenBytes> vocabulary;
    if (constrained) vocabulary.emplace(*model);
    else std::fputs(prompt.c_str(), stdout);
    std::fflush(stdout);

    // Each event comes after the eval that produced its logits (the prompt for the first), so
    // the probes read here cover the prompt and every decode step. The residual probe covers the
    // prompt's forward pass only: it is switched off after the first event. With a draft, one
    // eval yields several events (the cache unchanged between them): its probes are read once.
    std::vector<OpTiming> timings;
    std::vector<int32_t> probes_read_for;  // the cache when the probes were last read
    std::vector<ResidualStat> prompt_residual;
    bool prompt_probes_read = false;
    auto read_probes = [&] {
        if (prompt_probes_read && session.tokens() == probes_read_for) return;
        probes_read_for = session.tokens();
        add_timings(timings, session.probes().timings);
        if (prompt_probes_read) return;
        prompt_probes_read = true;
        prompt_residual = session.probes().residual;
        if (so.probes.residual_stats) {
            so.probes.residual_stats = false;
            session.set_probes(so.probes);
        }
    };
    // Ctrl-C: the token being computed finishes, then generation stops; the timing line is
    // printed, the pipeline cache saved (when the Model goes) and the exit code is 130. A
    // watcher cancels the session too, for a Ctrl-C while the prompt is evaluated.
    const InterruptWatch interrupt(session);
    const TokenCallback on_token = [&](const TokenEvent& ev) {
        read_probes();
        std::fputs(ev.text.c_str(), stdout);
        std::fflush(stdout);
        return !interrupt.interrupted();
    };
    const GenerateResult result = grammar ? generate_json(session, tokens, go, *grammar, *vocabulary, on_token)
                                  : gbnf  ? generate_with_grammar(session, tokens, go, *gbnf, *vocabulary, on_token)
                                          : session.generate(tokens, go, on_token);
    if (!prompt_probes_read) read_probes();  // -n 0: the prompt's eval alone
    std::fputs("\n", stdout);
    std::fflush(stdout);
    if (result.reason == StopReason::Error) throw std::runtime_error(result.message);
    if (result.reason == StopReason::ContextFull)
        std::fprintf(stderr, "\nvkllm: the context of %d tokens is full; stopping\n", session.n_ctx());

    if (!prompt_residual.empty() && !prompt_residual.front().token_max_abs.empty()) {
        // The stats cover the newest tokens of the prompt (its last forward pass, or all of it).
        const size_t covered = std::min(prompt_residual.front().token_max_abs.size(), tokens.size());
        print_activation_report(stderr, prompt_residual, std::vector<int32_t>(tokens.end() - long(covered), tokens.end()),
                                int(tokens.size() - covered), *model);
    }
    print_expert_stats("prompt", session.probes().expert_load_prefill);
    print_expert_stats("decode", session.probes().expert_load_decode);
    if (so.probes.timings) {
        std::fprintf(stderr, "vkllm: GPU time by op (prompt + decode):\n");
        for (const auto& t : timings)
            std::fprintf(stderr, "  %-10s %9.3f ms  %6d dispatch groups\n", t.op.c_str(), t.ms, t.count);
    }
    print_timing_line(result, draft_session != nullptr);
    // Pipelines new to this device were compiled: before the prompt when prepared, else (or
    // beyond what the preparation foresaw) during it.
    if (model->compiled_shaders() && prepared.compiled > 0)
        std::fprintf(stderr, "note: first run on this device (or of this kind of model): %d shaders compiled in %.1f s "
                             "before the prompt, not in the timings\n", prepared.compiled, prepared.seconds);
    else if (model->compiled_shaders())
        std::fprintf(stderr, "note: first run on this device (or of this kind of model): shader compilation is "
                             "included in the timings\n");
    if (interrupt.interrupted()) {
        std::fprintf(stderr, "vkllm: interrupted\n");
        return 130;  // 128 + SIGINT, as a shell reports a command stopped by Ctrl-C
    }
    // A value generate_json completes ends with EndOfGeneration; anything else left it unfinished.
    if (gbnf && result.reason != StopReason::EndOfGeneration)
        throw std::runtime_error("the grammar's text is incomplete: generation stopped (" +
                                 std::string(to_string(result.reason)) + ") after " + tokens_text(result.tokens.size()) +
                                 (result.reason == StopReason::MaxTokens ? "; allow more tokens with -n" : ""));
    if (grammar && result.reason != StopReason::EndOfGeneration)
        throw std::runtime_error("the JSON value is incomplete: generation stopped (" + std::string(to_string(result.reason)) +
                                 ") after " + tokens_text(result.tokens.size()) + "; the output is not whole JSON" +
                                 (result.reason == StopReason::MaxTokens ? "; allow more tokens with -n" : ""));
    return 0;
}

}  // namespace

int cmd_run(const Args& args) { return with_usage(kUsage, run, args); }

}  // namespace vkllm::cli
