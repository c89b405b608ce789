// vkllm logits: float32 logits of every prompt position, [n_prompt_tokens][n_vocab] row-major
// (the layout of ../shared/tools/llama-oracle).
#include <algorithm>
#include <cstdio>

#include "model_file.h"
#include "options.h"
#include "output_file.h"
#include "vkllm/gguf.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm::cli {
namespace {

const char* kUsage =
    "vkllm logits [-m MODEL.gguf] (-p PROMPT | -f FILE) -o OUT.f32 [-c CTX] [-b BATCH] [--exact] [--device D]\n"
    "             [--cache-type auto|f16|f32|q8_0]\n"
    "  -f FILE: the prompt from a file or pipe, up to 128 MiB (-f -: standard input)\n"
    "  without -m: the small model built into vkllm (`vkllm inspect` shows it)\n"
    "  --exact: f32 activations throughout instead of llama.cpp's CPU rounding (see SessionOptions)";

int run(const Args& args) {
    Options o(args, {"-m", "-p", "-f", "-o", "-c", "--device", "-b", "--cache-type"}, {"--exact"});
    const std::optional<std::string> prompt = prompt_text(o);
    if (!prompt || !o.has("-o")) throw UsageError("-p PROMPT (or -f FILE) and -o are required");
    SessionOptions so;
    so.n_ctx = int(o.integer("-c", 0, 0));
    so.n_batch = int(o.integer("-b", 256, 1));
    so.kv_cache = cache_type(o);
    // Opened first: an output that cannot be written is reported before the model loads.
    OutputFile out(o.str("-o"));
    ModelOptions mo;
    mo.device = o.str("--device");
    auto model = Model::load(*open_model_file(o), mo);
    print_warnings(model->warnings());
    std::vector<int32_t> tokens = model->tokenize(*prompt, /*add_special=*/true, /*parse_special=*/false);
    if (tokens.empty()) throw UsageError("the prompt gives no tokens");
    so.llama_cpp_rounding = !o.has("--exact");
    if (so.n_ctx == 0) so.n_ctx = std::max<int>(int(tokens.size()), std::min(model->info().n_ctx_train, 4096));
    Session session(*model, so);
    std::vector<float> logits = session.eval(tokens, /*all_logits=*/true);

    out.write(logits.data(), logits.size() * sizeof(float));
    out.commit();
    std::fprintf(stderr, "vkllm: wrote logits of %zu tokens x %d vocab to %s\n", tokens.size(), model->n_vocab(),
                 out.path().c_str());
    return 0;
}

}  // namespace

int cmd_logits(const Args& args) { return with_usage(kUsage, run, args); }

}  // namespace vkllm::cli
