// vkllm logits: float32 logits of every prompt position, [n_prompt_tokens][n_vocab] row-major
// (the layout of ../shared/tools/llama-oracle).
#include <algorithm>
#include <cstdio>

#include "model_file.h"
#include "options.h"
#include "vkllm/gguf.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm::cli {
namespace {

const char* kUsage =
    "vkllm logits [-m MODEL.gguf] -p PROMPT -o OUT.f32 [-c CTX] [-b BATCH] [--exact] [--device D]\n"
    "  without -m: the small model built into vkllm (`vkllm inspect` shows it)\n"
    "  --exact: f32 activations throughout instead of llama.cpp's CPU rounding (see SessionOptions)";

int run(const Args& args) {
    Options o(args, {"-m", "-p", "-o", "-c", "--device", "-b"}, {"--exact"});
    if (!o.has("-p") || !o.has("-o")) throw UsageError("-p and -o are required");
    ModelOptions mo;
    mo.device = o.str("--device");
    auto model = Model::load(*open_model_file(o), mo);
    std::vector<int32_t> tokens = model->tokenize(o.str("-p"), /*add_special=*/true, /*parse_special=*/false);
    if (tokens.empty()) throw UsageError("the prompt gives no tokens");
    SessionOptions so;
    so.n_ctx = int(o.integer("-c", 0));
    so.n_batch = int(o.integer("-b", 256));
    so.llama_cpp_rounding = !o.has("--exact");
    if (so.n_ctx == 0) so.n_ctx = std::max<int>(int(tokens.size()), std::min(model->info().n_ctx_train, 4096));
    Session session(*model, so);
    std::vector<float> logits = session.eval(tokens, /*all_logits=*/true);

    const std::string out = o.str("-o");
    FILE* f = std::fopen(out.c_str(), "wb");
    if (!f) throw std::runtime_error("cannot write " + out);
    size_t written = std::fwrite(logits.data(), sizeof(float), logits.size(), f);
    bool ok = written == logits.size() && std::fclose(f) == 0;
    if (!ok) throw std::runtime_error("writing " + out + " failed");
    std::fprintf(stderr, "vkllm: wrote logits of %zu tokens x %d vocab to %s\n", tokens.size(), model->n_vocab(),
                 out.c_str());
    return 0;
}

}  // namespace

int cmd_logits(const Args& args) { return with_usage(kUsage, run, args); }

}  // namespace vkllm::cli
