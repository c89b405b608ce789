// vkllm template (-m MODEL | --template FILE.jinja) --messages FILE.json [options]
// Renders a chat template with a conversation and writes exactly the rendering to stdout.
#include <cstdio>
#include <string>

#include "commands.h"
#include "input_file.h"
#include "interrupt.h"
#include "options.h"
#include "vkllm/chat_template.h"
#include "vkllm/gguf.h"

namespace vkllm::cli {

namespace {

constexpr const char* kUsage =
    "vkllm template (-m MODEL.gguf | --template FILE.jinja) --messages FILE.json\n"
    "                      [--add-generation-prompt] [--bos TEXT] [--eos TEXT] [--tools FILE.json]\n"
    "                      [--extra FILE.json] [--name NAME] [--now YYYY-MM-DD]\n"
    "  -m MODEL.gguf            the model's tokenizer.chat_template (and its BOS/EOS texts)\n"
    "  --template FILE.jinja    a template file instead (up to 16 MiB, as --tools and --extra)\n"
    "  --name NAME              the model's named template tokenizer.chat_template.NAME (e.g. tool_use)\n"
    "  --messages FILE.json     a JSON list of {\"role\": ..., \"content\": ...} messages ('-': stdin; up to 64 MiB)\n"
    "  --tools FILE.json        a JSON list of tools (without it, `tools` is none)\n"
    "  --extra FILE.json        a JSON object of extra variables (e.g. {\"enable_thinking\": false})\n"
    "  --now DATE               the date strftime_now() formats (default: VKLLM_TEMPLATE_NOW, or today)\n"
    "The rendering goes to stdout with nothing added; a template that raises exits 1 with its message.";

// A template, messages, tools or extra file ("-": stdin), through the bounded reader: a device
// such as /dev/zero or an endless pipe is refused instead of filling memory.
std::string read_file(const std::string& path, const char* what) {
    const bool conversation = std::string(what) == "messages";
    return app::read_input(path, conversation ? app::kConversationFileMax : app::kSmallFileMax,
                           std::string(what) + " file");
}

// The text of token `id_key`'s token in the model's vocabulary, or "" when the model has none.
std::string special_token(const GgufFile& file, const std::string& id_key) {
    const GgufValue* id = file.find(id_key);
    const GgufValue* tokens = file.find("tokenizer.ggml.tokens");
    if (!id || !id->integer || !tokens || *id->integer < 0 || size_t(*id->integer) >= tokens->strings.size()) return "";
    return tokens->strings[size_t(*id->integer)];
}

int render(const Args& args) {
    Options o(args, {"-m", "--model", "--template", "--name", "--messages", "--tools", "--extra", "--bos", "--eos", "--now"},
              {"--add-generation-prompt"});
    std::string model = o.has("-m") ? o.str("-m") : o.str("--model");
    if (model.empty() == !o.has("--template")) throw UsageError("give either -m MODEL or --template FILE");
    if (!o.has("--messages")) throw UsageError("--messages FILE.json is required");
    if (o.has("--name") && model.empty()) throw UsageError("--name needs -m MODEL");

    std::string source;
    ChatTemplateInputs in;
    if (!model.empty()) {
        auto file = GgufFile::open(model);
        std::string key = "tokenizer.chat_template" + (o.has("--name") ? "." + o.str("--name") : std::string());
        const GgufValue* tpl = file->find(key);
        if (!tpl || !tpl->string) throw std::runtime_error(model + " has no string " + key);
        source = *tpl->string;
        in.bos_token = special_token(*file, "tokenizer.ggml.bos_token_id");
        in.eos_token = special_token(*file, "tokenizer.ggml.eos_token_id");
    } else {
        source = read_file(o.str("--template"), "template");
    }
    if (o.has("--bos")) in.bos_token = o.str("--bos");
    if (o.has("--eos")) in.eos_token = o.str("--eos");
    in.messages_json = read_file(o.str("--messages"), "messages");
    if (o.has("--tools")) in.tools_json = read_file(o.str("--tools"), "tools");
    if (o.has("--extra")) in.extra_json = read_file(o.str("--extra"), "extra");
    in.add_generation_prompt = o.has("--add-generation-prompt");
    in.now = o.str("--now");
    // Ctrl-C stops a slow template's render; the command then ends as an interrupted one.
    std::string text;
    {
        InterruptFlag interrupt;
        in.cancelled = [&] { return interrupt.interrupted(); };
        try {
            text = render_chat_template(source, in);
        } catch (const TemplateError& e) {
            if (!e.cancelled()) throw;
            std::fprintf(stderr, "vkllm template: interrupted\n");
            return 130;  // as a shell reports a command SIGINT ended
        }
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
    return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace

int cmd_template(const Args& args) { return with_usage(kUsage, render, args); }

}  // namespace vkllm::cli
