// vkllm chat: a multi-turn conversation in the terminal (or through a pipe). The Session keeps
// its KV cache between turns, so each turn evaluates only its own new tokens.
#include <atomic>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <poll.h>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "chat_conversation.h"
#include "chat_prompt.h"
#include "conversation_file.h"
#include "json_text.h"
#include "model_file.h"
#include "options.h"
#include "prepare_note.h"
#include "output_file.h"
#include "vkllm/generate.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm::cli {
namespace {

const char* kUsage =
    "vkllm chat [-m MODEL.gguf] [--system TEXT] [-n N] [-c CTX] [--temp T] [--top-k K] [--top-p P] [--min-p M]\n"
    "           [--repeat-penalty R] [--seed S] [--device D] [--verbose] [--cache-type auto|f16|f32|q8_0]\n"
    "  reads one message per line from stdin (a terminal or a pipe) and answers each on stdout;\n"
    "  -n: tokens per answer at most (default 256); --verbose: each turn's prompt and how many of\n"
    "  its tokens were evaluated (the rest came from the KV cache), on stderr\n"
    "  commands: /reset /undo /save FILE /load FILE /help /exit; Ctrl-C stops an answer, at the prompt it exits\n"
    "  without -m: the small model built into vkllm";

const char* kCommands =
    "  /reset       forget the conversation (the system message stays)\n"
    "  /undo        drop the last turn (your message and the answer)\n"
    "  /save FILE   write the conversation as JSON\n"
    "  /load FILE   read a conversation /save wrote (at most 64 MiB)\n"
    "  /help        this list\n"
    "  /exit        leave (so does end of input, or Ctrl-C at the prompt)\n";

// Set by SIGINT (Ctrl-C); the token callback stops the answer when it sees it.
volatile std::sig_atomic_t g_interrupted = 0;
void on_chat_sigint(int) { g_interrupted = 1; }

// SIGINT sets the flag; the answer's callback and the line reader look at it.
void install_sigint_handler() {
    struct sigaction sa = {};
    sa.sa_handler = on_chat_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sigaction(SIGINT, &sa, nullptr);
}

// Lines from stdin (a terminal or a pipe), read with poll() so Ctrl-C at the prompt is seen
// within 100 ms whenever it arrives (a blocking read could miss a signal that came just before it).
class LineReader {
public:
    // False at the end of input, or when Ctrl-C was pressed.
    bool next(std::string& line) {
        while (true) {
            if (const size_t nl = buffer_.find('\n'); nl != std::string::npos) {
                line = buffer_.substr(0, nl);
                buffer_.erase(0, nl + 1);
                if (!line.empty() && line.back() == '\r') line.pop_back();
                return true;
            }
            if (g_interrupted || eof_) break;
            pollfd p{STDIN_FILENO, POLLIN, 0};
            if (poll(&p, 1, 100) <= 0) continue;  // timeout, or EINTR: look at the flag again
            char chunk[4096];
            const ssize_t n = read(STDIN_FILENO, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) eof_ = true;
            else buffer_.append(chunk, size_t(n));
        }
        if (g_interrupted || buffer_.empty()) return false;
        line.swap(buffer_);  // a last line without a newline
        buffer_.clear();
        return true;
    }

private:
    std::string buffer_;
    bool eof_ = false;
};

// Text in JSON quotes; a model's invalid UTF-8 shows as U+FFFD.
std::string quoted(const std::string& text) { return app::json_text(nlohmann::json(text)); }

// The longest common prefix of two token lists.
size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    return n;
}

class Chat {
public:
    // Every render of the chat template stops at Ctrl-C (a slow template must not make the
    // chat deaf to it).
    Chat(const Model& model, Session& session, const GenerateOptions& options, const std::string& system, bool verbose)
        : model_(model), session_(session), options_(options), format_(model, [] { return g_interrupted != 0; }),
          conversation_(format_, system), verbose_(verbose) {}

    // Answers one line: a command or a message. False when the chat should end.
    bool handle(const std::string& line) {
        if (line.empty()) return true;
        try {
            if (line[0] == '/') {
                const bool go_on = command(line);
                g_interrupted = 0;  // a Ctrl-C during a command stopped its rendering, not the chat
                return go_on;
            }
            answer(line);
        } catch (const TemplateError& e) {
            if (!e.cancelled()) throw;
            g_interrupted = 0;  // this Ctrl-C stopped the rendering; the next one at the prompt leaves
            std::fprintf(stderr, "vkllm: stopped\n");
        }
        return true;
    }

private:
    bool command(const std::string& line) {
        const size_t space = line.find(' ');
        const std::string name = line.substr(0, space);
        std::string arg = space == std::string::npos ? "" : line.substr(space + 1);
        arg.erase(0, arg.find_first_not_of(' '));
        arg.erase(arg.find_last_not_of(' ') + 1);
        if (name == "/exit" || name == "/quit") return false;
        if (name == "/help") {
            std::fputs(kCommands, stderr);
        } else if (name == "/reset") {
            conversation_.reset();
            session_.reset();
            std::fprintf(stderr, "vkllm: the conversation is reset\n");
        } else if (name == "/undo") {
            if (!conversation_.undo()) {
                std::fprintf(stderr, "vkllm: nothing to undo\n");
            } else {
                session_.truncate(int(common_prefix(session_.tokens(), conversation_.tokens())));
                std::fprintf(stderr, "vkllm: the last turn is undone (%d turns left)\n", conversation_.turns());
            }
        } else if (name == "/save" || name == "/load") {
            if (arg.empty()) {
                std::fprintf(stderr, "vkllm: %s needs a file name\n", name.c_str());
            } else if (name == "/save") {
                try {
                    // The CLI's rule for output files: complete or the old file kept, and a device
                    // or pipe (/dev/stdout) written in place.
                    write_output_file(arg, app::conversation_json(conversation_.messages()));
                    std::fprintf(stderr, "vkllm: saved %d turns to %s\n", conversation_.turns(), arg.c_str());
                } catch (const std::exception& e) {
                    std::fprintf(stderr, "vkllm: %s\n", e.what());
                }
            } else {
                std::vector<ChatMessage> messages;
                try {
                    messages = app::read_conversation(arg);
                } catch (const std::exception& e) {  // it names the file and what is wrong
                    std::fprintf(stderr, "vkllm: %s\n", e.what());
                    return true;
                }
                try {
                    conversation_.load(std::move(messages));
                    std::fprintf(stderr, "vkllm: loaded %d turns from %s\n", conversation_.turns(), arg.c_str());
                } catch (const std::exception& e) {  // the template cannot render it
                    std::fprintf(stderr, "vkllm: cannot load %s: %s\n", arg.c_str(), e.what());
                }
            }
        } else {
            std::fprintf(stderr, "vkllm: unknown command %s; /help lists them\n", name.c_str());
        }
        return true;
    }

    void answer(const std::string& user) {
        ++turn_;
        std::vector<int32_t> prompt;
        try {
            prompt = conversation_.begin_turn(user);
        } catch (const TemplateError& e) {
            if (e.cancelled()) {  // Ctrl-C while the template rendered: as when it comes before the first token
                g_interrupted = 0;
                std::fprintf(stderr, "vkllm: stopped before the answer began; the message is dropped\n");
            } else {
                std::fprintf(stderr, "vkllm: the chat template cannot render the conversation: %s\n", e.what());
            }
            return;
        }
        if (verbose_) std::fprintf(stderr, "vkllm: turn %d prompt: %s\n", turn_, quoted(conversation_.prompt_text()).c_str());
        g_interrupted = 0;
        // Ctrl-C while the prompt is evaluated (no token yet to return false from): a watcher
        // asks the session to cancel, which it does within a forward pass.
        std::atomic<bool> generating{true};
        std::thread watcher([&] {
            while (generating.load()) {
                if (g_interrupted) {
                    session_.cancel();
                    return;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
        });
        const GenerateResult r = session_.generate(prompt, options_, [&](const TokenEvent& ev) {
            std::fputs(ev.text.c_str(), stdout);
            std::fflush(stdout);
            return g_interrupted == 0;
        });
        generating = false;
        watcher.join();
        g_interrupted = 0;  // this Ctrl-C stopped the answer; the next one at the prompt leaves
        std::fputs("\n", stdout);
        std::fflush(stdout);
        const bool stopped = r.reason == StopReason::Callback || r.reason == StopReason::Cancelled;
        if (stopped && r.tokens.empty()) {
            std::fprintf(stderr, "vkllm: stopped before the answer began; the message is dropped\n");
            conversation_.abandon_turn();
            return;
        }
        if (r.reason == StopReason::ContextFull && r.tokens.empty()) {
            std::fprintf(stderr, "vkllm: %s; /reset or /undo to make room (or a larger -c)\n", r.message.c_str());
            conversation_.abandon_turn();
            return;
        }
        if (r.reason == StopReason::Error) {
            std::fprintf(stderr, "vkllm: error: %s\n", r.message.c_str());
            conversation_.abandon_turn();
            return;
        }
        if (verbose_)
            std::fprintf(stderr, "vkllm: turn %d: %d prompt tokens, %d from the cache, %d evaluated; %zu generated (%s)\n",
                         turn_, r.n_prompt, r.n_prompt - r.n_prompt_evaluated, r.n_prompt_evaluated, r.tokens.size(),
                         to_string(r.reason));
        if (stopped) std::fprintf(stderr, "vkllm: stopped\n");
        if (r.reason == StopReason::ContextFull)
            std::fprintf(stderr, "vkllm: the context of %d tokens is full; /reset or /undo to go on\n", session_.n_ctx());
        const int32_t eog = !r.tokens.empty() && model_.is_eog(r.tokens.back()) ? r.tokens.back() : -1;
        // A Ctrl-C while the answer's turn is rendered stops that rendering: the answer is kept
        // as the model said it.
        conversation_.end_turn(r.text, r.tokens, eog);
        if (g_interrupted) {
            g_interrupted = 0;
            std::fprintf(stderr, "vkllm: stopped\n");
        }
    }

    const Model& model_;
    Session& session_;
    GenerateOptions options_;
    ChatFormat format_;
    ChatConversation conversation_;
    bool verbose_;
    int turn_ = 0;
};

int chat(const Args& args) {
    Options o(args,
              {"-m", "--system", "-n", "-c", "--temp", "--top-k", "--top-p", "--min-p", "--repeat-penalty", "--seed",
               "--device", "--cache-type"},
              {"--verbose"});
    GenerateOptions go;
    go.max_tokens = int(o.integer("-n", 256, 1));
    go.sampler = sampler_params(o);

    SessionOptions so;
    so.n_ctx = int(o.integer("-c", 0, 0));  // checked before the model loads
    so.kv_cache = cache_type(o);

    ModelOptions mo;
    mo.device = o.str("--device");
    auto file = open_model_file(o);
    auto model = Model::load(*file, mo);
    print_warnings(model->warnings());
    Session session(*model, so);

    const bool tty = isatty(STDIN_FILENO);
    std::fprintf(stderr, "vkllm chat: %s (%s), context %d tokens; /help lists the commands\n",
                 o.has("-m") ? o.str("-m").c_str() : builtin_model_description().c_str(), model->info().arch.c_str(),
                 session.n_ctx());
    Chat chat(*model, session, go, o.str("--system"), o.has("--verbose"));
    if (model->info().chat_template.empty())
        std::fprintf(stderr, "vkllm chat: note: the model has no chat template; each message continues the text so far "
                             "(plain continuation)\n");
    // The shaders a short first turn needs, compiled before the first prompt is read.
    prepare_with_note(session);

    install_sigint_handler();
    LineReader input;
    std::string line;
    while (true) {
        if (tty) {
            std::fputs("> ", stdout);
            std::fflush(stdout);
        }
        if (!input.next(line)) break;  // end of input, or Ctrl-C at the prompt
        if (!chat.handle(line)) break;
    }
    if (tty) std::fputs("\n", stdout);
    return 0;
}

}  // namespace

int cmd_chat(const Args& args) { return with_usage(kUsage, chat, args); }

}  // namespace vkllm::cli
