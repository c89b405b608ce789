// vkllm chat on zoo-hybrid (Mamba-2 layers and one attention layer), whose recurrent state cannot
// forget positions: /undo and a different message (an edit of the last turn) give the
// conversation a fresh chat of the same messages gives, and the turn after /undo evaluates only
// its new tokens (the recurrent state came back from the snapshot taken where turn 1 ended).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <sys/wait.h>

#include "test_support.h"

namespace vkllm {
namespace {

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

// Runs `vkllm chat` on zoo-hybrid, greedy, with `input` on its stdin (a pipe).
Chat chat_hybrid(const std::string& name, const std::string& input) {
    const std::string in = test::temp_path(name + "-in.txt"), out = test::temp_path(name + "-out.txt"),
                      err = test::temp_path(name + "-err.txt");
    std::ofstream(in, std::ios::binary) << input;
    const std::string cmd = "cat " + in + " | " + test::vkllm_bin() + " chat -m " + test::source_dir() +
                            "/assets/zoo/zoo-hybrid.gguf --temp 0 -n 12 --verbose >" + out + " 2>" + err;
    const int status = std::system(cmd.c_str());
    Chat c;
    c.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    c.out = read_text(out);
    c.err = read_text(err);
    return c;
}

// --verbose's count for turn n: prompt tokens, and of them those that came from the cache.
std::pair<int, int> prompt_and_cached(const std::string& err, int n) {
    const std::regex re("turn " + std::to_string(n) + ": (\\d+) prompt tokens, (\\d+) from the cache");
    std::smatch m;
    if (!std::regex_search(err, m, re)) return {-1, -1};
    return {std::stoi(m[1]), std::stoi(m[2])};
}

TEST(ChatHybrid, UndoAndAnotherMessageAnswerAsAFreshChat) {
    const std::string edited_file = test::temp_path("hybrid-edited.json"), fresh_file = test::temp_path("hybrid-fresh.json");
    const Chat edited = chat_hybrid("hybrid-edited", "Once upon a time\nThe dog ran\n/undo\nOne day, a girl\n/save " +
                                                         edited_file + "\n");
    ASSERT_EQ(edited.code, 0) << edited.err;
    const Chat fresh = chat_hybrid("hybrid-fresh", "Once upon a time\nOne day, a girl\n/save " + fresh_file + "\n");
    ASSERT_EQ(fresh.code, 0) << fresh.err;

    // The saved conversations (both messages and both answers) are the same document.
    const std::string a = read_text(edited_file), b = read_text(fresh_file);
    ASSERT_FALSE(a.empty()) << edited.err;
    EXPECT_EQ(a, b);

    // /undo cut the session back to turn 1 in the cache, plus turn 1's last answer token, which
    // turn 2 had evaluated (a fresh chat's turn 2 evaluates it): the recurrent state came back
    // from the snapshot taken where turn 2 began (tests/model/test_state_snapshots.cpp counts
    // what such a truncate evaluates), and turn 3 evaluated only its new tokens.
    const auto [prompt1, cached1] = prompt_and_cached(edited.err, 1);
    const auto [prompt3, cached3] = prompt_and_cached(edited.err, 3);
    const auto [fresh_prompt2, fresh_cached2] = prompt_and_cached(fresh.err, 2);
    ASSERT_GT(prompt1, 0) << edited.err;
    EXPECT_EQ(cached1, 0);
    EXPECT_EQ(prompt3, fresh_prompt2) << edited.err << fresh.err;
    EXPECT_GT(fresh_cached2, prompt1) << fresh.err;
    EXPECT_EQ(cached3, fresh_cached2 + 1) << edited.err << fresh.err;
}

}  // namespace
}  // namespace vkllm
