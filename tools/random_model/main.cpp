// vkllm-random-model: writes a random-weight GGUF model that llama.cpp loads (see README.md).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "random_model/random_model.h"

namespace {

using vkllm::random_model::ConfigError;

const char* kDefaultVocab = VKLLM_DEFAULT_VOCAB;

void print_usage(FILE* out) {
    std::string archs;
    for (const auto& a : vkllm::random_model::architectures()) archs += (archs.empty() ? "" : ", ") + a;
    std::fprintf(out,
                 "usage: vkllm-random-model --out FILE.gguf [options]\n"
                 "Writes a random-weight model with llama.cpp's tensor names and metadata.\n"
                 "  --arch A              %s (default llama)\n"
                 "  --out FILE            output GGUF file (required)\n"
                 "  --seed S              weights are a function of the seed (default 0)\n"
                 "  --name N              general.name (default random-<arch>)\n"
                 "  --n-embd N --n-layer N --n-head N --n-head-kv N --n-ff N --n-ctx N\n"
                 "                        sizes (defaults 64, 2, 4, 2, 160, 256)\n"
                 "  --head-dim D          per-head size (default n_embd / n_head)\n"
                 "  --type T              matrices: F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K..Q6_K MXFP4\n"
                 "                        (default F32; rows the block does not divide fall back\n"
                 "                        as llama.cpp's quantizer does, else F16)\n"
                 "  --vocab-from FILE     GGUF whose tokenizer.* metadata is copied\n"
                 "                        (default %s)\n"
                 "  --tied                no output.weight: logits use token_embd\n"
                 "  --rope-freq-base B    (default: the architecture's usual base)\n"
                 "  --rope-scaling S      linear:F | yarn:F:ORIG | llama3:F:LOW:HIGH:ORIG\n"
                 "  --sliding-window W    window of sliding-window layers (gemma2/gemma3)\n",
                 archs.c_str(), kDefaultVocab);
}

int parse_count(const std::string& option, const std::string& text) {
    try {
        size_t used = 0;
        long v = std::stol(text, &used);
        if (used == text.size() && v >= 0 && v <= (1l << 30)) return int(v);
    } catch (const std::exception&) {
    }
    throw ConfigError(option + " '" + text + "' is not a non-negative integer");
}

}  // namespace

int main(int argc, char** argv) {
    using namespace vkllm::random_model;
    RandomModelConfig config;
    std::string out, vocab = kDefaultVocab;
    try {
        for (int i = 1; i < argc; ++i) {
            const std::string opt = argv[i];
            if (opt == "-h" || opt == "--help") {
                print_usage(stdout);
                return 0;
            }
            if (opt == "--tied") {
                config.tied = true;
                continue;
            }
            if (i + 1 >= argc) throw ConfigError(opt + " needs a value (see --help)");
            const std::string val = argv[++i];
            if (opt == "--arch") config.arch = val;
            else if (opt == "--out") out = val;
            else if (opt == "--name") config.name = val;
            else if (opt == "--vocab-from") vocab = val;
            else if (opt == "--seed") {
                try {
                    size_t used = 0;
                    config.seed = std::stoull(val, &used, 0);
                    if (used != val.size()) throw std::invalid_argument(val);
                } catch (const std::exception&) {
                    throw ConfigError("--seed '" + val + "' is not an unsigned integer");
                }
            } else if (opt == "--n-embd") config.n_embd = parse_count(opt, val);
            else if (opt == "--n-layer") config.n_layer = parse_count(opt, val);
            else if (opt == "--n-head") config.n_head = parse_count(opt, val);
            else if (opt == "--n-head-kv") config.n_head_kv = parse_count(opt, val);
            else if (opt == "--n-ff") config.n_ff = parse_count(opt, val);
            else if (opt == "--n-ctx") config.n_ctx = parse_count(opt, val);
            else if (opt == "--head-dim") config.head_dim = parse_count(opt, val);
            else if (opt == "--sliding-window") config.sliding_window = parse_count(opt, val);
            else if (opt == "--type") {
                auto t = vkllm::gguf::type_from_name(val);
                if (!t) throw ConfigError("--type '" + val + "' is not a GGUF tensor type");
                config.type = *t;
            } else if (opt == "--rope-freq-base") {
                try {
                    config.rope_freq_base = std::stof(val);
                } catch (const std::exception&) {
                    throw ConfigError("--rope-freq-base '" + val + "' is not a number");
                }
            } else if (opt == "--rope-scaling") config.rope_scaling = parse_rope_scaling(val);
            else throw ConfigError("unknown option '" + opt + "' (see --help)");
        }
        if (out.empty()) throw ConfigError("--out FILE.gguf is required (see --help)");
        write_random_model(config, vocab, out);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vkllm-random-model: %s\n", e.what());
        return 1;
    }
    return 0;
}
