// vkllm tokenize [-m MODEL] (-p TEXT | -f FILE) [--add-special] [--parse-special]
// Prints the token ids of TEXT, space-separated, on one line.
#include <cstdio>
#include <string>

#include "commands.h"
#include "model_file.h"
#include "options.h"
#include "vkllm/tokenizer.h"

namespace vkllm::cli {

namespace {

const char* kUsage =
    "vkllm tokenize [-m MODEL.gguf] (-p TEXT | -f FILE) [--add-special] [--parse-special]\n"
    "  -m MODEL.gguf    the model whose tokenizer to use; without it, the model built into vkllm\n"
    "  -f FILE          the text from a file or pipe, up to 128 MiB (-f -: standard input)\n"
    "  --add-special    add BOS/EOS as the model's vocabulary asks\n"
    "  --parse-special  turn special-token text such as <|im_start|> into its id";

int tokenize(const Args& args) {
    Options o(args, {"-m", "--model", "-p", "--prompt", "-f"}, {"--add-special", "--parse-special"});
    if (o.has("-m") && o.has("--model")) throw UsageError("give the model with -m or --model, not both");
    if (o.has("--prompt")) throw UsageError("--prompt is spelt -p");
    const std::string model_path = o.has("--model") ? o.str("--model") : o.str("-m");
    if ((o.has("-m") || o.has("--model")) && model_path.empty()) throw UsageError("-m names no file");
    const std::optional<std::string> text = prompt_text(o);
    if (!text) throw UsageError("missing -p TEXT or -f FILE");
    const bool add_special = o.has("--add-special");
    const bool parse_special = o.has("--parse-special");

    const auto file = open_model_file(model_path);
    // The vocabulary alone: tokenizing needs no GPU.
    const auto tok = Tokenizer::from_file(*file);
    print_warnings(tok->warnings());
    const std::vector<int32_t> ids = tok->tokenize(*text, add_special, parse_special);
    // The BOS the vocabulary adds, if any: the tokens of an empty text with specials added.
    if (add_special && parse_special && ids.size() >= 2) {
        const std::vector<int32_t> bos = tok->tokenize("", true, false);
        if (!bos.empty() && ids[0] == bos[0] && ids[1] == bos[0])
            std::fprintf(stderr, "vkllm tokenize: warning: the text starts with the BOS token %s and --add-special "
                                 "added another: the ids begin with two BOS\n", tok->token_text(bos[0]).c_str());
    }
    std::string line;
    for (size_t i = 0; i < ids.size(); ++i) {
        if (i) line += ' ';
        line += std::to_string(ids[i]);
    }
    std::printf("%s\n", line.c_str());
    return 0;
}

}  // namespace

int cmd_tokenize(const Args& args) { return with_usage(kUsage, tokenize, args); }

}  // namespace vkllm::cli
