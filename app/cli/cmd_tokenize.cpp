// vkllm tokenize [-m MODEL] -p TEXT [--add-special] [--parse-special]
// Prints the token ids of TEXT, space-separated, on one line.
#include <cstdio>
#include <string>

#include "commands.h"
#include "model_file.h"
#include "vkllm/tokenizer.h"

namespace vkllm::cli {

namespace {

constexpr const char* kUsage =
    "usage: vkllm tokenize [-m MODEL.gguf] -p TEXT [--add-special] [--parse-special]\n"
    "  -m MODEL.gguf    the model whose tokenizer to use; without it, the model built into vkllm\n"
    "  --add-special    add BOS/EOS as the model's vocabulary asks\n"
    "  --parse-special  turn special-token text such as <|im_start|> into its id\n";

int usage_error(const std::string& message) {
    std::fprintf(stderr, "vkllm tokenize: %s\n%s", message.c_str(), kUsage);
    return 2;
}

}  // namespace

int cmd_tokenize(const Args& args) {
    std::string model_path;  // empty: the built-in model
    std::string text;
    bool have_text = false;
    bool add_special = false;
    bool parse_special = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "-m" || a == "--model" || a == "-p" || a == "--prompt") {
            if (i + 1 >= args.size()) return usage_error("option " + a + " needs a value");
            if (a == "-m" || a == "--model") {
                model_path = args[++i];
                if (model_path.empty()) return usage_error(a + " names no file");
            } else {
                text = args[++i];
                have_text = true;
            }
        } else if (a == "--add-special") {
            add_special = true;
        } else if (a == "--parse-special") {
            parse_special = true;
        } else if (a == "-h" || a == "--help") {
            std::printf("%s", kUsage);
            return 0;
        } else {
            return usage_error("unknown argument '" + a + "'");
        }
    }
    if (!have_text) return usage_error("missing -p TEXT");

    const auto file = open_model_file(model_path);
    // The vocabulary alone: tokenizing needs no GPU.
    const auto tok = Tokenizer::from_file(*file);
    const std::vector<int32_t> ids = tok->tokenize(text, add_special, parse_special);
    std::string line;
    for (size_t i = 0; i < ids.size(); ++i) {
        if (i) line += ' ';
        line += std::to_string(ids[i]);
    }
    std::printf("%s\n", line.c_str());
    return 0;
}

}  // namespace vkllm::cli
