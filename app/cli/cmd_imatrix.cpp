// vkllm imatrix: an importance matrix of a text, as llama.cpp's llama-imatrix computes it (its
// chunks, its sums, its GGUF file or legacy .dat), the sums taken on the GPU (vkllm/imatrix.h).
#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "input_file.h"
#include "model_file.h"
#include "options.h"
#include "vkllm/imatrix.h"
#include "vkllm/model.h"

namespace vkllm::cli {
namespace {

const char* kUsage =
    "vkllm imatrix [-m MODEL.gguf] -f TEXT [-o imatrix.gguf] [-c N_CTX] [-b BATCH] [--chunk N] [--chunks K]\n"
    "              [--output-format gguf|dat] [--process-output] [--no-ppl] [--parse-special] [--exact]\n"
    "              [--cache-type auto|f16|f32|q8_0] [--device D]\n"
    "  llama-imatrix's collection: the text is tokenized with BOS, cut into chunks of N_CTX tokens (default\n"
    "  512, at most the model's training context), each run alone from an empty cache with BOS first; every\n"
    "  layer weight's matmul input adds its x_j^2 per column (stacked experts: per expert, over the tokens\n"
    "  routed to it), on the GPU. Progress and the running perplexity of each chunk's second half on stderr\n"
    "  -o: the file (default imatrix.gguf) in llama.cpp's GGUF imatrix format, or with --output-format dat\n"
    "  its legacy format; `vkllm quantize --imatrix` and llama-quantize read either\n"
    "  --chunk N: skip the first N chunks; --chunks K: at most K chunks (default: every whole chunk)\n"
    "  --process-output: output.weight's input too; --no-ppl: no perplexity; --exact: f32 activations\n"
    "  instead of llama.cpp's CPU rounding for quantised weights\n"
    "  -f TEXT: a file or pipe of at most 512 MiB (-: standard input), one final newline dropped\n"
    "  without -m: the small model built into vkllm";

int run(const Args& args) {
    Options o(args, {"-m", "-f", "-o", "-c", "-b", "--chunk", "--chunks", "--output-format", "--device", "--cache-type"},
              {"--process-output", "--no-ppl", "--parse-special", "--exact"});
    if (!o.has("-f")) throw UsageError("-f TEXT is required");
    int n_ctx = int(o.integer("-c", 0, 0));
    if (o.has("-c") && n_ctx < 2) throw UsageError("-c must be at least 2");
    ImatrixOptions io;
    io.n_batch = int(o.integer("-b", 512, 1));
    io.from_chunk = int(o.integer("--chunk", 0, 0));
    io.max_chunks = int(o.integer("--chunks", -1, -1));
    io.process_output = o.has("--process-output");
    io.compute_ppl = !o.has("--no-ppl");
    io.llama_cpp_rounding = !o.has("--exact");
    io.kv_cache = cache_type(o);
    const std::string format = o.str("--output-format", "gguf");
    if (format != "gguf" && format != "dat") throw UsageError("--output-format must be gguf or dat, got '" + format + "'");
    const std::string out = o.str("-o", "imatrix.gguf");
    if (!o.has("--output-format") && (out.size() < 5 || out.compare(out.size() - 5, 5, ".gguf") != 0))
        std::fprintf(stderr, "vkllm: writing %s in the GGUF format (--output-format dat: llama-imatrix's legacy format)\n",
                     out.c_str());
    io.dataset = o.str("-f");
    std::string text = app::read_input(io.dataset, app::kTextFileMax, "text file");
    if (!text.empty() && text.back() == '\n') text.pop_back();  // as llama.cpp's -f

    ModelOptions mo;
    mo.device = o.str("--device");
    auto model = Model::load(*open_model_file(o), mo);
    print_warnings(model->warnings());
    if (n_ctx == 0) n_ctx = std::min(512, model->info().n_ctx_train > 0 ? model->info().n_ctx_train : 512);
    io.n_ctx = n_ctx;

    const std::vector<int32_t> tokens = model->tokenize(text, /*add_special=*/true, o.has("--parse-special"));
    std::fprintf(stderr, "vkllm: %s: %zu tokens; chunks of %d tokens\n", io.dataset.c_str(), tokens.size(), n_ctx);
    Imatrix m;
    try {
        m = compute_imatrix(*model, tokens, io, [&](const ImatrixProgress& p) {
            if (p.chunk == 0)
                std::fprintf(stderr, "vkllm: computing over %d chunks, %.2f seconds per pass - ETA %.2f minutes\n",
                             p.n_chunks, p.seconds, p.seconds * p.n_chunks / 60.0);
            if (io.compute_ppl) std::fprintf(stderr, "[%d]%.4f,", p.chunk + 1, p.perplexity);
            else std::fprintf(stderr, "[%d],", p.chunk + 1);
            std::fflush(stderr);
        });
    } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
    }
    std::fprintf(stderr, "\n");
    if (format == "dat") write_imatrix_dat(m, out);
    else write_imatrix(m, out);
    int partial = 0;
    for (const ImatrixEntry& e : m.entries)
        if (std::any_of(e.counts.begin(), e.counts.end(), [](int64_t c) { return c == 0; })) ++partial;
    std::printf("imatrix: %zu entries from %d chunks of %d tokens written to %s", m.entries.size(), m.chunk_count,
                m.chunk_size, out.c_str());
    if (partial) std::printf(" (%d with experts no token reached)", partial);
    std::printf("\n");
    return 0;
}

}  // namespace

int cmd_imatrix(const Args& args) { return with_usage(kUsage, run, args); }

}  // namespace vkllm::cli
