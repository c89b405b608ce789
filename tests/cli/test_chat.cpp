// vkllm chat through piped stdin: turns answered with the KV cache kept (a turn evaluates only
// its new tokens), /undo, /save and /load of the JSON conversation, /reset, a model with a chat
// template (the prompt is the template's text, one BOS), and Ctrl-C (stops an answer; at the
// prompt, leaves).
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <regex>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "gguf/gguf.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"

namespace vkllm {
namespace {

using nlohmann::json;

std::string bin() {
    const char* b = std::getenv("VKLLM_BIN");
    return b ? b : "vkllm";
}

std::string zoo_dense() { return test::source_dir() + "/assets/zoo/zoo-dense.gguf"; }

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

struct Chat {
    int code = -1;
    std::string out, err;
};

// Runs `vkllm chat ARGS` with `input` on its stdin (a pipe).
Chat chat(const std::string& args, const std::string& input) {
    const std::string in = test::temp_path("chat-in.txt"), out = test::temp_path("chat-out.txt"),
                      err = test::temp_path("chat-err.txt");
    std::ofstream(in, std::ios::binary) << input;
    const std::string cmd = "cat " + in + " | " + bin() + " chat " + args + " >" + out + " 2>" + err;
    const int status = std::system(cmd.c_str());
    Chat c;
    c.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    c.out = read_text(out);
    c.err = read_text(err);
    return c;
}

// What --verbose says about turn n: prompt tokens, reused from the cache, evaluated, generated.
struct TurnStats {
    int prompt = -1, cached = -1, evaluated = -1, generated = -1;
};
TurnStats turn_stats(const std::string& err, int n) {
    const std::regex re("turn " + std::to_string(n) +
                        ": (\\d+) prompt tokens, (\\d+) from the cache, (\\d+) evaluated; (\\d+) generated");
    std::smatch m;
    TurnStats s;
    if (std::regex_search(err, m, re))
        s = {std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]), std::stoi(m[4])};
    return s;
}

// The prompt text --verbose prints for turn n (a JSON string), or "" when absent.
std::string turn_prompt(const std::string& err, int n) {
    const std::string tag = "turn " + std::to_string(n) + " prompt: ";
    const size_t at = err.find(tag);
    if (at == std::string::npos) return "";
    const size_t end = err.find('\n', at);
    return json::parse(err.substr(at + tag.size(), end - at - tag.size())).get<std::string>();
}

TEST(Chat, PlainContinuationKeepsTheCacheAcrossTurnsUndoSaveLoadReset) {
    const std::string saved = test::temp_path("conversation.json");
    const Chat c = chat("-m " + zoo_dense() + " --temp 0 -n 6 --verbose",
                        "Once upon a time\nThe cat\n/undo\nOne day\n/save " + saved +
                            "\n/reset\n/load " + saved + "\nAnd then\n/bogus\n/exit\nnever read\n");
    ASSERT_EQ(c.code, 0) << c.err;
    EXPECT_NE(c.err.find("no chat template"), std::string::npos) << c.err;

    // Turn 1 is evaluated whole; turn 2 only its new tokens (the cache holds turn 1's prompt and
    // every answer token but the last, which was sampled and not yet evaluated).
    const TurnStats t1 = turn_stats(c.err, 1), t2 = turn_stats(c.err, 2), t3 = turn_stats(c.err, 3);
    ASSERT_GT(t1.prompt, 0) << c.err;
    EXPECT_EQ(t1.cached, 0);
    EXPECT_EQ(t1.generated, 6);
    ASSERT_GT(t2.prompt, 0) << c.err;
    EXPECT_EQ(t2.cached, t1.prompt + t1.generated - 1) << c.err;
    EXPECT_EQ(t2.evaluated, t2.prompt - t2.cached);
    EXPECT_LE(t2.evaluated, 5) << "turn 2 adds \"\\nThe cat\" and the last answer token";

    // /undo drops turn 2: turn 3 continues turn 1, reusing all of it (turn 2 evaluated the last
    // answer token of turn 1 too).
    EXPECT_NE(c.err.find("the last turn is undone (1 turns left)"), std::string::npos) << c.err;
    ASSERT_GT(t3.prompt, 0) << c.err;
    EXPECT_EQ(t3.cached, t1.prompt + t1.generated) << c.err;

    // The saved conversation: turn 1 and turn 3, the answers as printed.
    const json doc = json::parse(read_text(saved));
    EXPECT_EQ(doc["format"], "vkllm-chat");
    ASSERT_EQ(doc["messages"].size(), 4u) << doc.dump();
    EXPECT_EQ(doc["messages"][0]["role"], "user");
    EXPECT_EQ(doc["messages"][0]["content"], "Once upon a time");
    EXPECT_EQ(doc["messages"][1]["role"], "assistant");
    EXPECT_EQ(doc["messages"][2]["content"], "One day");
    const std::string a1 = doc["messages"][1]["content"], a3 = doc["messages"][3]["content"];
    EXPECT_FALSE(a1.empty());
    EXPECT_EQ(turn_prompt(c.err, 3), "Once upon a time" + a1 + "\nOne day");
    EXPECT_EQ(c.out.find(a1 + "\n"), 0u) << c.out;
    EXPECT_NE(c.out.find(a3 + "\n"), std::string::npos) << c.out;

    // /reset, then /load restores the conversation the next turn continues.
    EXPECT_NE(c.err.find("the conversation is reset"), std::string::npos) << c.err;
    EXPECT_NE(c.err.find("loaded 2 turns"), std::string::npos) << c.err;
    EXPECT_EQ(turn_prompt(c.err, 4), "Once upon a time" + a1 + "\nOne day" + a3 + "\nAnd then");
    EXPECT_GT(turn_stats(c.err, 4).generated, 0) << c.err;
    EXPECT_NE(c.err.find("unknown command /bogus"), std::string::npos) << c.err;
    EXPECT_EQ(turn_stats(c.err, 5).prompt, -1) << "nothing is read after /exit";
}

TEST(Chat, FirstAnswerIsWhatRunGenerates) {
    const Chat c = chat("-m " + zoo_dense() + " --temp 0 -n 8", "Once upon a time\n");
    ASSERT_EQ(c.code, 0) << c.err;
    const std::string out = test::temp_path("run-out.txt");
    ASSERT_EQ(std::system((bin() + " run -m " + zoo_dense() + " -p 'Once upon a time' --temp 0 -n 8 >" + out +
                           " 2>/dev/null").c_str()), 0);
    EXPECT_EQ("Once upon a time" + c.out, read_text(out));
}

TEST(Chat, LoadRejectsWhatIsNotAConversation) {
    const std::string bad = test::temp_path("bad.json"), wrong = test::temp_path("wrong.json");
    std::ofstream(bad) << "{ not json";
    std::ofstream(wrong) << R"({"format": "vkllm-chat", "messages": [{"role": "assistant", "content": "hi"}]})";
    const Chat c = chat("-m " + zoo_dense() + " -n 2", "/load " + bad + "\n/load " + wrong + "\n/load\n/undo\n");
    EXPECT_EQ(c.code, 0) << c.err;
    EXPECT_NE(c.err.find("cannot load " + bad + ": not JSON"), std::string::npos) << c.err;
    EXPECT_NE(c.err.find("has role \"assistant\" where \"user\" belongs"), std::string::npos) << c.err;
    EXPECT_NE(c.err.find("/load needs a file name"), std::string::npos) << c.err;
    EXPECT_NE(c.err.find("nothing to undo"), std::string::npos) << c.err;
}

// zoo-dense with a chat template added (bracketed roles; the answer closed by the EOS text).
std::string templated_model() {
    const std::string path = test::temp_path("zoo-dense-chat.gguf");
    auto f = gguf::File::open(zoo_dense());
    gguf::Writer w;
    for (const std::string& key : f->keys_in_order()) w.set(key, *f->find(key));
    w.set("tokenizer.chat_template",
          gguf::Value::from_string("{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}"
                                   "{% if m.role == 'assistant' %}{{ eos_token }}{% endif %}{% endfor %}"
                                   "{% if add_generation_prompt %}[assistant]{% endif %}"));
    for (const gguf::TensorInfo& t : f->tensors())
        w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    w.write(path);
    return path;
}

TEST(Chat, TemplatedModelPromptIsTheTemplatesTextAndTurnsAddOnlyTheirTokens) {
    const std::string model = templated_model();
    const std::string saved = test::temp_path("templated.json");
    const Chat c = chat("-m " + model + " --temp 0 -n 5 --verbose --system 'You tell stories.'",
                        "Once upon a time\nThe cat\n/save " + saved + "\n");
    ASSERT_EQ(c.code, 0) << c.err;
    EXPECT_EQ(c.err.find("no chat template"), std::string::npos) << c.err;
    const json doc = json::parse(read_text(saved));
    ASSERT_EQ(doc["messages"].size(), 5u) << doc.dump();
    EXPECT_EQ(doc["messages"][0]["role"], "system");
    const std::string a1 = doc["messages"][2]["content"];

    const std::string p1 = "<s>[system]You tell stories.[user]Once upon a time[assistant]";
    const std::string p2 = p1 + a1 + "</s>[user]The cat[assistant]";
    EXPECT_EQ(turn_prompt(c.err, 1), p1) << c.err;
    EXPECT_EQ(turn_prompt(c.err, 2), p2) << c.err;

    // The prompt's tokens are the template text's, control tokens parsed: one BOS (the
    // template's), not two.
    auto f = gguf::File::open(model);
    auto tok = tokenizer::Tokenizer::from_gguf(*f);
    const std::vector<int32_t> ids1 = tok->encode(p1, /*add_special=*/false, /*parse_special=*/true);
    ASSERT_EQ(ids1.front(), tok->bos());
    const TurnStats t1 = turn_stats(c.err, 1), t2 = turn_stats(c.err, 2);
    EXPECT_EQ(t1.prompt, int(ids1.size())) << c.err;
    // Turn 2 reuses turn 1's prompt and answer from the cache; it evaluates the last answer
    // token, the closing </s> (or the model's own end of text) and the new turn.
    EXPECT_EQ(t2.cached, t1.prompt + t1.generated - 1) << c.err;
    const int new_tokens = int(tok->encode("</s>[user]The cat[assistant]", false, true).size());
    EXPECT_LE(t2.evaluated, new_tokens + 1) << c.err;
    EXPECT_GE(t2.evaluated, new_tokens - 1) << c.err;
}

// /load makes the undo points before every user message without rendering them; /undo works
// each out when it reaches it. A loaded conversation's turns come back as the live one's did:
// after /undo twice, the next turn's prompt is the same text, in the same number of tokens,
// reusing as many from the cache, as after the same two /undo in the conversation that was saved.
TEST(Chat, LoadedConversationUndoesAsTheLiveOne) {
    const std::string model = templated_model();
    const std::string saved = test::temp_path("undo-after-load.json");
    const std::string args = "-m " + model + " --temp 0 -n 4 --verbose --system 'You tell stories.'";
    const Chat live = chat(args, "Once upon a time\nThe cat\nA dog\n/save " + saved + "\n/undo\n/undo\nThe end\n");
    ASSERT_EQ(live.code, 0) << live.err;
    const Chat loaded = chat(args, "Something else\n/load " + saved + "\n/undo\n/undo\nThe end\n");
    ASSERT_EQ(loaded.code, 0) << loaded.err;
    EXPECT_NE(loaded.err.find("loaded 3 turns"), std::string::npos) << loaded.err;
    EXPECT_NE(loaded.err.find("the last turn is undone (1 turns left)"), std::string::npos) << loaded.err;
    const std::string prompt = turn_prompt(live.err, 4);
    ASSERT_NE(prompt, "") << live.err;
    EXPECT_EQ(prompt.rfind("<s>[system]You tell stories.[user]Once upon a time[assistant]", 0), 0u) << prompt;
    EXPECT_EQ(turn_prompt(loaded.err, 2), prompt) << loaded.err;
    const TurnStats a = turn_stats(live.err, 4), b = turn_stats(loaded.err, 2);
    EXPECT_EQ(b.prompt, a.prompt) << loaded.err;
    EXPECT_EQ(b.generated, a.generated) << loaded.err;
    // The loaded chat's cache holds "Something else" and its answer: it reuses the system prefix.
    EXPECT_GT(b.cached, 0) << loaded.err;
}

TEST(Chat, CtrlCStopsTheAnswerAndAtThePromptLeaves) {
    int to_chat[2];
    ASSERT_EQ(pipe(to_chat), 0);
    const std::string out = test::temp_path("sig-out.txt"), err = test::temp_path("sig-err.txt");
    const std::string b = bin(), m = zoo_dense();
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        dup2(to_chat[0], 0);
        close(to_chat[1]);
        const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1);
        dup2(e, 2);
        execl(b.c_str(), b.c_str(), "chat", "-m", m.c_str(), "-n", "200", "--verbose", static_cast<char*>(nullptr));
        _exit(127);
    }
    close(to_chat[0]);
    const std::string line = "Once upon a time\n";
    ASSERT_EQ(write(to_chat[1], line.data(), line.size()), ssize_t(line.size()));
    // Ctrl-C once the answer has begun.
    auto wait_for = [&](const std::string& path, const std::string& what) {
        for (int i = 0; i < 1200; ++i) {
            const std::string text = read_text(path);
            if (what.empty() ? !text.empty() : text.find(what) != std::string::npos) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return false;
    };
    ASSERT_TRUE(wait_for(out, "")) << read_text(err);
    kill(pid, SIGINT);
    ASSERT_TRUE(wait_for(err, "turn 1:")) << read_text(err);
    // At the prompt, Ctrl-C leaves (stdin still open).
    kill(pid, SIGINT);
    int status = 0;
    for (int i = 0; i < 600 && waitpid(pid, &status, WNOHANG) == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    close(to_chat[1]);
    if (waitpid(pid, &status, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        FAIL() << "chat did not leave on Ctrl-C at the prompt: " << read_text(err);
    }
    ASSERT_TRUE(WIFEXITED(status)) << read_text(err);
    EXPECT_EQ(WEXITSTATUS(status), 0);
    const std::string e = read_text(err);
    EXPECT_NE(e.find("vkllm: stopped"), std::string::npos) << e;
    const TurnStats t1 = turn_stats(e, 1);
    EXPECT_GT(t1.generated, 0) << e;
    EXPECT_LT(t1.generated, 200) << e;
}

}  // namespace
}  // namespace vkllm
