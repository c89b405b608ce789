// vkllm: the command-line front end. Dispatches to one cmd_* function per subcommand.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <string>

#include "commands.h"
#include "model_file.h"
#include "vkllm/device.h"

namespace {

struct Command {
    int (*run)(const vkllm::cli::Args&);
    const char* help;
};

const std::map<std::string, Command>& commands() {
    using namespace vkllm::cli;
    static const std::map<std::string, Command> table = {
        {"run", {cmd_run, "generate text: run [-m MODEL] -p PROMPT -n N [sampling options]"}},
        {"logits", {cmd_logits, "logits of every prompt position: logits [-m MODEL] -p PROMPT -o OUT.f32"}},
        {"tokenize", {cmd_tokenize, "token ids of a text: tokenize [-m MODEL] -p TEXT [--add-special] [--parse-special]"}},
        {"bench", {cmd_bench, "prompt and decode speed: bench [-m MODEL] [-p 512] [-n 128] [-r 3] [--json]"}},
        {"info", {cmd_info, "Vulkan devices and their capabilities: info [--json]"}},
        {"inspect", {cmd_inspect, "a GGUF file: inspect [FILE.gguf] [--tensors] | --super [FILE.gguf] [--json]"}},
        {"imatrix", {cmd_imatrix, "importance matrix of a text: imatrix [-m MODEL] -f TEXT [-o imatrix.gguf] [-c N_CTX] [--chunks K]"}},
        {"quantize", {cmd_quantize, "rewrite weights: quantize IN.gguf OUT.gguf TYPE"}},
        {"template", {cmd_template, "render a chat template: template (-m MODEL | --template FILE) --messages FILE.json [...]"}},
        {"chat", {cmd_chat, "a conversation on stdin/stdout: chat [-m MODEL] [--system TEXT] [sampling options]"}},
        {"serve", {cmd_serve, "OpenAI-compatible HTTP server: serve [-m MODEL] [--host 127.0.0.1] [--port 8080]"}},
        {"perplexity", {cmd_perplexity, "llama.cpp's perplexity of a text: perplexity [-m MODEL] -f TEXT [-c N_CTX] [--json]"}},
        {"embed", {cmd_embed, "an encoder's embeddings: embed [-m MODEL] (-p TEXT | -f FILE) [--pooling none|mean|cls|last] [--normalize] -o OUT.f32 [--json]"}},
        {"fill-mask", {cmd_fill_mask, "masked-token prediction: fill-mask [-m MODEL] -p \"The cat sat on the [MASK].\" [-k 5] [--json]"}},
        {"probe", {cmd_probe, "probes as JSON: probe [-m MODEL] -p PROMPT [-n N] [--attention L,..] ... -o OUT.json"}},
    };
    return table;
}

void usage(FILE* out) {
    std::fprintf(out, "usage: vkllm <command> [options]\n\ncommands:\n");
    for (const auto& [name, cmd] : commands()) std::fprintf(out, "  %-9s %s\n", name.c_str(), cmd.help);
    std::fprintf(out, "\nwithout -m (inspect: without FILE), commands use %s\n",
                 vkllm::cli::builtin_model_description().c_str());
    std::fprintf(out, "\nenvironment: VKLLM_DEVICE=INDEX|NAME, VKLLM_VALIDATE=1, VKLLM_LIMITS=mobile\n");
}

// Everything a command printed on stdout must have arrived: a write error there (a full disk,
// a closed pipe) is a failure, exit 1 with the reason, even when the command itself succeeded.
int check_stdout(const char* command, int code) {
    errno = 0;
    const bool failed = std::fflush(stdout) != 0 || std::ferror(stdout);
    if (!failed) return code;
    const int error = errno;  // 0: an earlier write failed, its errno is gone
    std::fprintf(stderr, "vkllm %s: error: writing the standard output failed: %s\n", command,
                 error ? std::strerror(error) : "an earlier write was refused");
    return code == 0 ? 1 : code;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return check_stdout("--help", argc < 2 ? 2 : 0);
    }
    if (!std::strcmp(argv[1], "--version")) {
        std::printf("vkllm %s\n", VKLLM_VERSION);
        return check_stdout("--version", 0);
    }
    auto it = commands().find(argv[1]);
    if (it == commands().end()) {
        std::fprintf(stderr, "vkllm: unknown command '%s'\n\n", argv[1]);
        usage(stderr);
        return 2;
    }
    vkllm::cli::Args args(argv + 2, argv + argc);
    int code = 1;
    try {
        code = it->second.run(args);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vkllm %s: error: %s\n", argv[1], e.what());
        code = 1;
    }
    // VKLLM_VALIDATE=1: a run the validation layer found errors in is a failed run.
    if (const uint64_t n = vkllm::validation_error_count(); n > 0) {
        std::fprintf(stderr, "vkllm %s: error: the Vulkan validation layer reported %llu error%s\n", argv[1],
                     static_cast<unsigned long long>(n), n == 1 ? "" : "s");
        if (code == 0) code = 1;
    }
    return check_stdout(argv[1], code);
}
