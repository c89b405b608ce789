// What vkllm reads and writes whole: every input the user names (-f files, standard input, chat
// /load) is read with a size limit and only from a file, pipe or terminal, and every JSON writer
// emits valid UTF-8 whatever bytes the text holds. Each case runs the vkllm binary as a shell
// would, timed and with its peak memory (wait4), under an address-space limit so that a runaway
// read fails fast instead of filling the machine.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace vkllm {
namespace {

namespace fs = std::filesystem;

struct Outcome {
    int code = -1;          // exit status; -1: killed (by the time limit or a signal)
    std::string out, err;   // stdout, stderr
    double seconds = 0;
    long max_rss_mib = 0;   // peak resident memory of the command and what it waited for
};

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string zoo(const std::string& name) { return test::source_dir() + "/assets/zoo/" + name + ".gguf"; }

const char* kReplacement = "\xef\xbf\xbd";  // U+FFFD in UTF-8

// Runs `script` with bash ($VKLLM: the binary), standard input from `input`, under an 8 GiB
// address-space limit (a normal run maps about 1 GiB) and a time limit.
Outcome run(const std::string& script, const std::string& input = "/dev/null", int timeout_s = 60) {
    const std::string out_path = test::temp_path("out.txt"), err_path = test::temp_path("err.txt");
    const std::string full = "ulimit -v 8388608; export VKLLM='" + test::vkllm_bin() + "'; " + script;
    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        const int in = open(input.c_str(), O_RDONLY);
        const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || out < 0 || err < 0) _exit(127);
        dup2(in, 0);
        dup2(out, 1);
        dup2(err, 2);
        execl("/bin/bash", "bash", "-c", full.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    Outcome r;
    int status = 0;
    rusage usage = {};
    while (true) {
        const pid_t done = wait4(pid, &status, WNOHANG, &usage);
        if (done == pid) break;
        if (std::chrono::steady_clock::now() - start > std::chrono::seconds(timeout_s)) {
            kill(-pid, SIGKILL);
            wait4(pid, &status, 0, &usage);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.max_rss_mib = usage.ru_maxrss / 1024;
    r.out = slurp(out_path);
    r.err = slurp(err_path);
    return r;
}

std::string describe(const Outcome& r) {
    return "exit " + std::to_string(r.code) + " after " + std::to_string(r.seconds) + " s, " +
           std::to_string(r.max_rss_mib) + " MiB\nstdout: " + r.out.substr(0, 2000) + "\nstderr: " + r.err.substr(0, 2000);
}

// A file of `bytes` bytes that takes no disk (a hole): only its size is looked at.
std::string sparse_file(const std::string& name, uint64_t bytes) {
    const std::string path = test::temp_path(name);
    std::ofstream(path, std::ios::binary | std::ios::trunc).close();
    fs::resize_file(path, bytes);
    return path;
}

constexpr uint64_t kMiB = uint64_t(1) << 20;

// ---- Endless and special inputs ----

// `vkllm run -f /dev/zero` once took 16-19 GB and then died of bad_alloc: a character device
// (or a directory) is refused by name before a byte is read.
TEST(CliInputs, DevicesAndDirectoriesAreRefusedByName) {
    const std::string dir = test::temp_path("a-folder");
    fs::create_directories(dir);
    const std::string out = test::temp_path("refused.f32");
    struct Case {
        std::string command, needle;
    };
    const Case cases[] = {
        {"$VKLLM run -f /dev/zero -n 1", "cannot read prompt file /dev/zero: it is a character device"},
        {"$VKLLM run -f /dev/urandom -n 1", "cannot read prompt file /dev/urandom: it is a character device"},
        {"$VKLLM run -f " + dir + " -n 1", "cannot read prompt file " + dir + ": it is a directory"},
        {"$VKLLM run -f - -n 1 < /dev/zero", "cannot read prompt file from standard input: it is a character device"},
        {"$VKLLM tokenize -f /dev/zero", "cannot read prompt file /dev/zero"},
        {"$VKLLM logits -f /dev/zero -o " + out, "cannot read prompt file /dev/zero"},
        {"$VKLLM perplexity -f /dev/zero", "cannot read text file /dev/zero: it is a character device"},
        {"$VKLLM perplexity -f " + dir, "cannot read text file " + dir + ": it is a directory"},
        {"$VKLLM embed -m " + zoo("zoo-bert") + " -f /dev/zero -o " + out, "cannot read text file /dev/zero"},
    };
    for (const Case& c : cases) {
        const Outcome r = run(c.command);
        EXPECT_EQ(r.code, 1) << c.command << "\n" << describe(r);
        EXPECT_TRUE(contains(r.err, c.needle)) << c.command << "\n" << describe(r);
        EXPECT_LT(r.seconds, 30) << c.command;
        EXPECT_LT(r.max_rss_mib, 1024) << c.command;
    }
    EXPECT_FALSE(fs::exists(out));

    // chat /load: a message, and the chat goes on.
    const std::string commands = test::temp_path("load-devices.txt");
    std::ofstream(commands) << "/load /dev/zero\n/load " << dir << "\n/load /nonexistent/conversation.json\n/help\n";
    const Outcome r = run("$VKLLM chat -n 2", commands);
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_TRUE(contains(r.err, "cannot read conversation /dev/zero: it is a character device, not a regular file or a pipe"))
        << describe(r);
    EXPECT_TRUE(contains(r.err, "cannot read conversation " + dir + ": it is a directory")) << describe(r);
    EXPECT_TRUE(contains(r.err, "cannot read conversation /nonexistent/conversation.json: No such file")) << describe(r);
    EXPECT_TRUE(contains(r.err, "/exit")) << "the chat went on to /help\n" << describe(r);
    EXPECT_LT(r.max_rss_mib, 1024);
}

// Files past a command's limit are refused by their size, before they are read; a pipe that
// goes on past the limit is refused once it passes it. Each message names the limit.
TEST(CliInputs, InputsPastTheirLimitAreRefusedWithTheLimit) {
    const std::string out = test::temp_path("limit.f32");
    struct Case {
        std::string command, needle;
    };
    const std::string prompt = sparse_file("prompt-129m.txt", 129 * kMiB);
    const std::string corpus = sparse_file("corpus-513m.txt", 513 * kMiB);
    const std::string lines = sparse_file("lines-65m.txt", 65 * kMiB);
    const Case cases[] = {
        {"$VKLLM run -n 1 -f " + prompt, "it has 129 MiB (135266304 bytes); the limit for a prompt file is 128 MiB"},
        {"$VKLLM tokenize -f " + prompt, "the limit for a prompt file is 128 MiB"},
        {"$VKLLM perplexity -f " + corpus, "it has 513 MiB (537919488 bytes); the limit for a text file is 512 MiB"},
        {"$VKLLM embed -m " + zoo("zoo-bert") + " -o " + out + " -f " + lines, "the limit for a text file is 64 MiB"},
        {"yes 'some text on a line' | head -c 140000000 | $VKLLM tokenize -f -",
         "cannot read prompt file from standard input: it goes on past 128 MiB; the limit for a prompt file is 128 MiB"},
    };
    for (const Case& c : cases) {
        const Outcome r = run(c.command);
        EXPECT_EQ(r.code, 1) << c.command << "\n" << describe(r);
        EXPECT_TRUE(contains(r.err, c.needle)) << c.command << "\n" << describe(r);
        EXPECT_LT(r.seconds, 30) << c.command;
        EXPECT_LT(r.max_rss_mib, 1024) << c.command;
    }
    const std::string big_conversation = sparse_file("conversation-65m.json", 65 * kMiB);
    const std::string commands = test::temp_path("load-big.txt");
    std::ofstream(commands) << "/load " << big_conversation << "\n";
    const Outcome r = run("$VKLLM chat -n 2", commands);
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_TRUE(contains(r.err, "cannot read conversation " + big_conversation +
                                    ": it has 65 MiB (68157440 bytes); the limit for a conversation is 64 MiB"))
        << describe(r);
    for (const std::string& p : {prompt, corpus, lines, big_conversation}) fs::remove(p);
}

// What should be read still is: a regular file, a FIFO, a pipe on standard input.
TEST(CliInputs, FilesFifosAndPipesAreRead) {
    const std::string text = test::temp_path("prompt.txt");
    std::ofstream(text) << "Once upon a time";
    const Outcome file = run("$VKLLM tokenize -f " + text);
    EXPECT_EQ(file.code, 0) << describe(file);
    EXPECT_FALSE(file.out.empty());
    const Outcome piped = run("printf 'Once upon a time' | $VKLLM tokenize -f -");
    EXPECT_EQ(piped.code, 0) << describe(piped);
    EXPECT_EQ(piped.out, file.out);
    const std::string fifo = test::temp_path("prompt.fifo");
    fs::remove(fifo);
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    const Outcome through_fifo = run("(printf 'Once upon a time' > " + fifo + " &); $VKLLM tokenize -f " + fifo);
    EXPECT_EQ(through_fifo.code, 0) << describe(through_fifo);
    EXPECT_EQ(through_fifo.out, file.out);
    fs::remove(fifo);
}

// ---- JSON writers: valid UTF-8 whatever the text holds ----

// A conversation holding bytes that are not UTF-8 (typed here; a model's sampled token can leave
// the same) once made /save fail with nlohmann's type_error.316 and write nothing, and --verbose's
// quoted prompt threw out of the turn.
TEST(CliInputs, ChatSavesAndQuotesInvalidUtf8) {
    const std::string saved = test::temp_path("invalid-utf8.json");
    fs::remove(saved);
    const std::string commands = test::temp_path("invalid-utf8.txt");
    std::ofstream(commands, std::ios::binary) << "caf\xc3 \xff\xfe ok\n/save " << saved << "\n";
    const Outcome r = run("$VKLLM chat -n 4 --temp 0 --verbose", commands);
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_TRUE(contains(r.err, "saved 1 turns to " + saved)) << describe(r);
    EXPECT_TRUE(contains(r.err, std::string("turn 1 prompt: \"caf") + kReplacement + " " + kReplacement + kReplacement))
        << describe(r);
    ASSERT_TRUE(fs::exists(saved)) << describe(r);
    const nlohmann::json doc = nlohmann::json::parse(slurp(saved));  // parsing checks the UTF-8
    ASSERT_EQ(doc["messages"].size(), 2u);
    EXPECT_EQ(doc["messages"][0]["content"], std::string("caf") + kReplacement + " " + kReplacement + kReplacement + " ok");
    // What was saved loads again.
    const std::string again = test::temp_path("load-invalid-utf8.txt");
    std::ofstream(again) << "/load " << saved << "\n";
    const Outcome load = run("$VKLLM chat -n 2", again);
    EXPECT_TRUE(contains(load.err, "loaded 1 turns from " + saved)) << describe(load);
}

TEST(CliInputs, JsonOutputsReplaceInvalidUtf8) {
    const std::string out = test::temp_path("utf8.f32");
    const std::string probe = test::temp_path("utf8-probe.json");
    struct Case {
        std::string command;
        std::string output;     // the JSON's file; empty: stdout
        bool holds_text = true;  // the input text is in the JSON (fill-mask's holds tokens alone)
    };
    const Case cases[] = {
        {"$VKLLM embed -m " + zoo("zoo-bert") + " -p $'caf\\xc3 au lait' -o " + out + " --json", ""},
        {"$VKLLM embed -m " + zoo("zoo-bert") + " -f <(printf 'caf\\xc3\\nthe \\xff cat\\n') -o " + out + " --json", ""},
        {"$VKLLM fill-mask -m " + zoo("zoo-bert") + " -p $'the \\xff cat sat on the [MASK].' --json", "", false},
        {"$VKLLM probe -p $'caf\\xc3' -n 3 -o " + probe, probe},
    };
    for (const Case& c : cases) {
        const Outcome r = run(c.command);
        ASSERT_EQ(r.code, 0) << c.command << "\n" << describe(r);
        const std::string text = c.output.empty() ? r.out : slurp(c.output);
        nlohmann::json j;
        EXPECT_NO_THROW(j = nlohmann::json::parse(text)) << c.command << "\n" << text.substr(0, 2000);
        if (c.holds_text) {
            EXPECT_TRUE(contains(text, kReplacement)) << c.command << "\n" << text.substr(0, 2000);
        }
    }
}

// ---- chat /load: linear in the conversation ----

// 40,000 messages (1.6 MB) once took time and memory quadratic in their count (every undo
// point rendered and tokenized up front; 20,000 messages: 1.9 GB, 20 s). Loading now renders
// the conversation once; the undo points are worked out when /undo reaches them.
TEST(CliInputs, ChatLoadIsLinear) {
    const std::string conversation = test::temp_path("long.json");
    nlohmann::json messages = nlohmann::json::array();
    for (int i = 0; i < 20000; ++i) {
        messages.push_back({{"role", "user"}, {"content", "Tell me about the number " + std::to_string(i) + "."}});
        messages.push_back({{"role", "assistant"}, {"content", "It comes after " + std::to_string(i - 1) + "."}});
    }
    std::ofstream(conversation) << nlohmann::json{{"format", "vkllm-chat"}, {"version", 1}, {"messages", messages}}.dump();
    const std::string saved = test::temp_path("long-saved.json");
    fs::remove(saved);

    const std::string idle = test::temp_path("idle.txt");
    std::ofstream(idle) << "/help\n";
    const Outcome base = run("$VKLLM chat -n 2", idle);
    ASSERT_EQ(base.code, 0) << describe(base);
    const std::string commands = test::temp_path("load-long.txt");
    std::ofstream(commands) << "/load " << conversation << "\n/undo\n/save " << saved << "\n";
    const Outcome r = run("$VKLLM chat -n 2", commands);
    ASSERT_EQ(r.code, 0) << describe(r);
    EXPECT_TRUE(contains(r.err, "loaded 20000 turns from")) << describe(r);
    EXPECT_TRUE(contains(r.err, "the last turn is undone (19999 turns left)")) << describe(r);
    EXPECT_TRUE(contains(r.err, "saved 19999 turns to")) << describe(r);
    EXPECT_LT(r.seconds - base.seconds, 15) << describe(r) << "\nwithout /load: " << describe(base);
    EXPECT_LT(r.max_rss_mib - base.max_rss_mib, 400) << describe(r) << "\nwithout /load: " << describe(base);
    // The restored conversation is the file's, less the turn undone.
    const nlohmann::json back = nlohmann::json::parse(slurp(saved));
    ASSERT_EQ(back["messages"].size(), messages.size() - 2);
    for (size_t i = 0; i < back["messages"].size(); i += 997) EXPECT_EQ(back["messages"][i], messages[i]) << i;
    EXPECT_EQ(back["messages"].back(), messages[messages.size() - 3]);
}

}  // namespace
}  // namespace vkllm
