// Ctrl-C while a chat template renders: `vkllm chat` drops the message as when Ctrl-C comes
// before the first token and goes on; `vkllm template` ends as an interrupted command. The
// template here renders for about a second when the last message is "slow" (a loop of a
// million steps that writes nothing), at once otherwise.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "gguf/gguf.h"
#include "test_support.h"

namespace vkllm {
namespace {

const char* kSlowTemplate =
    "{% if messages[-1].content == 'slow' %}{% for i in range(999999) %}{% if i < 0 %}x{% endif %}{% endfor %}"
    "{% endif %}{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
    "{% if add_generation_prompt %}[assistant]{% endif %}";

std::string bin() {
    const char* b = std::getenv("VKLLM_BIN");
    return b ? b : "vkllm";
}

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// zoo-dense with the slow template as its chat template.
std::string slow_model() {
    const std::string path = test::temp_path("zoo-dense-slow-template.gguf");
    auto f = gguf::File::open(test::source_dir() + "/assets/zoo/zoo-dense.gguf");
    gguf::Writer w;
    for (const std::string& key : f->keys_in_order()) w.set(key, *f->find(key));
    w.set("tokenizer.chat_template", gguf::Value::from_string(kSlowTemplate));
    for (const gguf::TensorInfo& t : f->tensors())
        w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    w.write(path);
    return path;
}

// A running `vkllm ARGS...` with a pipe to its stdin and its output in files.
struct Child {
    pid_t pid = -1;
    int stdin_fd = -1;
    std::string out, err;

    explicit Child(const std::vector<std::string>& args) {
        out = test::temp_path("interrupt-out.txt");
        err = test::temp_path("interrupt-err.txt");
        int to_child[2];
        if (pipe(to_child) != 0) return;
        const std::string b = bin();
        pid = fork();
        if (pid == 0) {
            dup2(to_child[0], 0);
            close(to_child[1]);
            const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            dup2(o, 1);
            dup2(e, 2);
            std::vector<char*> argv = {const_cast<char*>(b.c_str())};
            for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
            argv.push_back(nullptr);
            execv(b.c_str(), argv.data());
            _exit(127);
        }
        close(to_child[0]);
        stdin_fd = to_child[1];
    }

    void write_line(const std::string& line) const {
        const std::string text = line + "\n";
        ASSERT_EQ(write(stdin_fd, text.data(), text.size()), ssize_t(text.size()));
    }
    void close_stdin() {
        if (stdin_fd >= 0) close(stdin_fd);
        stdin_fd = -1;
    }
    // True once stderr holds `what` (within about a minute).
    bool wait_for_err(const std::string& what) const {
        for (int i = 0; i < 1200; ++i) {
            if (read_text(err).find(what) != std::string::npos) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return false;
    }
    // True once the process catches SIGINT (its handler is installed: /proc's SigCgt mask).
    bool wait_sigint_caught() const {
        for (int i = 0; i < 1200; ++i) {
            std::ifstream status("/proc/" + std::to_string(pid) + "/status");
            for (std::string line; std::getline(status, line);)
                if (line.rfind("SigCgt:", 0) == 0 && (std::stoull(line.substr(7), nullptr, 16) >> (SIGINT - 1)) & 1)
                    return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return false;
    }
    // The exit status, or -1 when it has not ended within `seconds` (then it is killed).
    int wait_exit(double seconds) {
        int status = 0;
        for (int i = 0; i < int(seconds * 20) && waitpid(pid, &status, WNOHANG) == 0; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        close_stdin();
        if (waitpid(pid, &status, WNOHANG) == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
};

TEST(TemplateInterrupt, ChatCtrlCDuringRenderingDropsTheMessageAndGoesOn) {
    Child chat({"chat", "-m", slow_model(), "--temp", "0", "-n", "4", "--verbose"});
    ASSERT_GT(chat.pid, 0);
    ASSERT_TRUE(chat.wait_sigint_caught()) << read_text(chat.err);  // loaded, reading its input
    chat.write_line("slow");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the template is rendering
    kill(chat.pid, SIGINT);
    ASSERT_TRUE(chat.wait_for_err("the message is dropped")) << read_text(chat.err);
    // The chat goes on: the next message is answered, and the end of input ends it.
    chat.write_line("hello");
    ASSERT_TRUE(chat.wait_for_err("turn 2:")) << read_text(chat.err);
    chat.close_stdin();
    EXPECT_EQ(chat.wait_exit(60), 0) << read_text(chat.err);
    const std::string err = read_text(chat.err);
    EXPECT_EQ(err.find("cannot render"), std::string::npos) << err;
    EXPECT_EQ(err.find("turn 1 prompt"), std::string::npos) << err;  // the slow turn never had a prompt
    EXPECT_NE(err.find("turn 2 prompt: \"<s>[user]hello[assistant]\""), std::string::npos) << err;
}

TEST(TemplateInterrupt, TemplateCommandEndsOnCtrlC) {
    const std::string tpl = test::temp_path("slow.jinja"), messages = test::temp_path("slow-messages.json");
    std::ofstream(tpl) << kSlowTemplate;
    std::ofstream(messages) << R"([{"role": "user", "content": "slow"}])";
    Child t({"template", "--template", tpl, "--messages", messages});
    ASSERT_GT(t.pid, 0);
    ASSERT_TRUE(t.wait_sigint_caught());  // rendering (the handler is installed around it)
    kill(t.pid, SIGINT);
    EXPECT_EQ(t.wait_exit(30), 130) << read_text(t.err);
    EXPECT_NE(read_text(t.err).find("vkllm template: interrupted"), std::string::npos) << read_text(t.err);
    EXPECT_EQ(read_text(t.out), "");
}

}  // namespace
}  // namespace vkllm
