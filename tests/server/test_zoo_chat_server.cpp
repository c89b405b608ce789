// vkllm serve with zoo-chat (assets/zoo, a ChatML template in its GGUF): /v1/chat/completions
// renders the conversation through the template and answers with llama.cpp's greedy answer to
// the same conversation (tests/golden/zoo/zoo-chat-N, scripts/make-golden-zoo.sh), stopping at
// <|im_end|> with finish_reason "stop"; a system message fills the template's system slot (the
// prompt grows by its tokens). The server is the `vkllm` binary on a free loopback port, asked
// with curl (skipped without curl).
#include <gtest/gtest.h>

#include <chrono>
#include <signal.h>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace vkllm {
namespace {

using nlohmann::json;

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// `vkllm serve -m zoo-chat.gguf --port 0` in the background for the test's life.
class ZooChatServer {
public:
    ZooChatServer() {
        log_ = test::temp_path("zoo-chat-serve.log");
        const std::string pid_file = test::temp_path("zoo-chat-serve.pid");
        const std::string cmd = test::vkllm_bin() + " serve -m " + test::source_dir() +
                                "/assets/zoo/zoo-chat.gguf --port 0 -c 512 2>" + log_ + " >/dev/null & echo $! >" + pid_file;
        if (std::system(cmd.c_str()) != 0) return;
        pid_ = std::stoi(read_text(pid_file));
        const std::regex listening("listening on http://127\\.0\\.0\\.1:(\\d+)");
        for (int i = 0; i < 600 && port_ == 0; ++i) {  // up to 60 s
            std::smatch m;
            const std::string log = read_text(log_);
            if (std::regex_search(log, m, listening)) port_ = std::stoi(m[1]);
            else std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }
    ~ZooChatServer() {
        if (pid_ > 0) kill(pid_, SIGTERM);
    }
    int port() const { return port_; }
    std::string log() const { return read_text(log_); }

    // POST `body` to `path`; the response's JSON body.
    json post(const std::string& path, const json& body) const {
        const std::string file = test::write_temp_file("zoo-chat-request.json", body.dump());
        const auto r = test::shell("curl -s --max-time 240 -H 'Content-Type: application/json' --data-binary @" + file +
                                   " http://127.0.0.1:" + std::to_string(port_) + path);
        EXPECT_EQ(r.code, 0) << r.out;
        return json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    }

private:
    std::string log_;
    int pid_ = -1;
    int port_ = 0;
};

std::vector<int32_t> golden_ids(size_t i, const char* kind) {
    return test::read_ids(test::source_dir() + "/tests/golden/zoo/zoo-chat-" + std::to_string(i) + "." + kind + ".txt");
}

TEST(ZooChatServer, ChatCompletionsAnswerThroughTheTemplate) {
    if (test::shell("command -v curl >/dev/null").code != 0) GTEST_SKIP() << "curl is not installed";
    ZooChatServer server;
    ASSERT_GT(server.port(), 0) << "the server did not listen:\n" << server.log();

    std::ifstream in(test::source_dir() + "/tests/golden/zoo/zoo-chat.prompts.json");
    const json conversations = json::parse(in);
    // The story (no system message: the template's default) and the list (with its own).
    for (size_t i : {size_t(1), size_t(3)}) {
        SCOPED_TRACE("conversation " + conversations[i].dump());
        std::vector<int32_t> answer = golden_ids(i, "greedy");
        ASSERT_FALSE(answer.empty());
        answer.pop_back();  // <|im_end|>, which ends the turn and is not part of the text
        const json expected = server.post("/detokenize", {{"tokens", answer}});
        ASSERT_TRUE(expected.contains("content")) << expected.dump();

        const json reply = server.post("/v1/chat/completions",
                                       {{"messages", conversations[i]}, {"temperature", 0}, {"max_tokens", 200}});
        ASSERT_TRUE(reply.contains("choices")) << reply.dump();
        EXPECT_EQ(reply["choices"][0]["message"]["content"], expected["content"]);
        EXPECT_EQ(reply["choices"][0]["finish_reason"], "stop");
        // The prompt is the template's rendering: llama.cpp's prompt tokens, BOS included.
        EXPECT_EQ(reply["usage"]["prompt_tokens"], golden_ids(i, "tokens").size());
        EXPECT_EQ(reply["usage"]["completion_tokens"], answer.size());  // the closing <|im_end|> not counted
    }
}

}  // namespace
}  // namespace vkllm
