// vkllm perplexity: llama-perplexity's measure of a text (perplexity.h says exactly what it is).
#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "input_file.h"
#include "interventions.h"
#include "json_text.h"
#include "model_file.h"
#include "options.h"
#include "perplexity.h"
#include "vkllm/model.h"

namespace vkllm::cli {
namespace {

const char* kUsage =
    "vkllm perplexity [-m MODEL.gguf] -f TEXT [-c N_CTX] [-b BATCH] [--exact] [--json] [--device D]\n"
    "                 [--zero-weight LAYER:TENSOR:ROW:COL[:EXPERT],...] [--effect-text FILE] [--cache-type auto|f16|f32|q8_0]\n"
    "  llama-perplexity's definition: the text cut into chunks of N_CTX tokens (default 512, at most the\n"
    "  model's training context), each run alone with BOS first (when the vocabulary adds BOS) and scored\n"
    "  on its second half (N_CTX - 1 - N_CTX/2 tokens, so N_CTX >= 3); progress on stderr. --exact: f32\n"
    "  activations instead of llama.cpp's CPU rounding\n"
    "  -f TEXT: a file or pipe of at most 512 MiB (-: standard input), read as llama.cpp's -f reads it:\n"
    "  one final newline dropped\n"
    "  --zero-weight: those weights set to 0 first (what a super weight is worth: docs/super-weights.md)\n"
    "  --effect-text: the zeroed weights also judged over FILE (up to 512 MiB, one context from position 0):\n"
    "  each position's KL(before || after), its perplexity before and after, the positions that moved most\n"
    "  (--json: the \"effect\" object)\n"
    "  without -m: the small model built into vkllm";

// A context of N tokens scores its last N - 1 - N/2 tokens of each chunk: none below 3.
void check_context(int n_ctx) {
    if (n_ctx < 3)
        throw UsageError("-c " + std::to_string(n_ctx) + " scores no token (each chunk of N_CTX tokens is scored on its last " +
                         "N_CTX - 1 - N_CTX/2): -c must be at least 3");
}

// The text of -f as llama.cpp's common arguments read it (common/arg.cpp: the whole file, then one
// final '\n' removed), so the same file gives llama-perplexity's tokens, chunks and numbers.
std::string read_text(const std::string& path) {
    std::string text = app::read_input(path, app::kTextFileMax, "text file");
    if (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
}

int run(const Args& args) {
    Options o(args, {"-m", "-f", "-c", "-b", "--device", "--zero-weight", "--cache-type", "--effect-text"}, {"--json", "--exact"});
    if (!o.has("-f")) throw UsageError("-f TEXT is required");
    int n_ctx = int(o.integer("-c", 0, 0));  // numbers checked before the model loads
    if (n_ctx != 0) check_context(n_ctx);
    const int n_batch = int(o.integer("-b", 256, 1));
    const KvCacheType kv_cache = cache_type(o);
    const std::string path = o.str("-f");
    const std::string text = read_text(path);

    ModelOptions mo;
    mo.device = o.str("--device");
    auto model = Model::load(*open_model_file(o), mo);
    print_warnings(model->warnings());
    const std::vector<WeightRef> zeroed = parse_zero_weights(o.str("--zero-weight"));
    if (o.has("--effect-text") && zeroed.empty()) throw UsageError("--effect-text judges --zero-weight: give the weights to zero");
    for (const WeightRef& w : zeroed) model->set_weight(w, 0.0f);
    // The zeroed weights judged over a text of its own, one context from position 0.
    nlohmann::json effect;
    if (o.has("--effect-text")) {
        const std::string effect_path = o.str("--effect-text");
        SessionOptions eo;
        eo.n_batch = n_batch;
        eo.llama_cpp_rounding = !o.has("--exact");
        eo.kv_cache = kv_cache;
        std::vector<int32_t> effect_tokens;
        const app::TextEffect e = judge_over_text(*model, read_text(effect_path), zeroed, {}, eo, &effect_tokens);
        if (o.has("--json")) effect = effect_json(*model, effect_tokens, e, effect_path);
        else print_effect(stdout, *model, effect_tokens, e, effect_path);
    }
    if (n_ctx == 0) n_ctx = std::min(512, model->info().n_ctx_train > 0 ? model->info().n_ctx_train : 512);
    check_context(n_ctx);

    const std::vector<int32_t> tokens = model->tokenize(text, /*add_special=*/true, /*parse_special=*/false);
    std::fprintf(stderr, "vkllm: %s: %zu tokens; %zu chunks of %d tokens, each scored on its last %d\n", path.c_str(),
                 tokens.size(), tokens.size() / size_t(n_ctx), n_ctx, n_ctx - 1 - n_ctx / 2);
    PerplexityResult r;
    try {
        r = compute_perplexity(*model, tokens, n_ctx, n_batch, !o.has("--exact"), kv_cache, [](int chunk, double running) {
            std::fprintf(stderr, "[%d]%.4f,", chunk + 1, running);
            std::fflush(stderr);
        });
    } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
    }
    std::fprintf(stderr, "\n");
    if (o.has("--json")) {
        nlohmann::json j = {{"perplexity", r.perplexity}, {"chunks", r.chunks},       {"n_ctx", r.n_ctx},
                            {"tokens", r.n_tokens},       {"scored_tokens", r.scored}, {"nll", r.nll},
                            {"nll_stderr", r.nll_stderr}, {"chunk_perplexity", r.chunk_perplexity},
                            {"model", model->info().source}};
        if (!effect.is_null()) j["effect"] = effect;
        std::printf("%s\n", app::json_text(j, 2).c_str());
    } else {
        std::printf("perplexity: %.4f +/- %.4f over %d chunks of %d tokens (%d tokens scored)\n", r.perplexity,
                    r.perplexity * r.nll_stderr, r.chunks, r.n_ctx, r.scored);
    }
    return 0;
}

}  // namespace

int cmd_perplexity(const Args& args) { return with_usage(kUsage, run, args); }

}  // namespace vkllm::cli
