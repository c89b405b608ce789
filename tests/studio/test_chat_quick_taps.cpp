// Quick taps into the chat box: under Xvfb, vkllm-studio --script gives the box the keyboard;
// then key taps come from the X server as a keyboard's do, a press and its release each, all
// within one of the studio's frames (as a fast typist's on a slow frame, while an answer is drawn
// on a CPU driver). After the script's long answer its Enter sends the box: the message must hold
// exactly what the taps typed after what the script typed, in order: letters, digits, BackSpaces
// and a key tapped twice.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "xvfb.h"
#include "x_keyboard.h"  // last: Xlib's macros (None, Bool, True) stay out of the headers above

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using vkllm::test::studio_binary;
using vkllm::test::Xvfb;

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Waits up to `seconds` for `path` to appear.
bool wait_for_file(const std::string& path, double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!fs::exists(path)) {
        if (std::chrono::steady_clock::now() > end) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

// Runs the studio on `script` (its lines after "tokens N", "type Hi" and an export of ready.json:
// the box has the keyboard and "Hi" then), sends `taps` from the X server in one batch as soon as
// ready.json appears, and reads the export the script ends with into `sent`.
void run_with_taps(const std::string& name, const std::string& script, const std::vector<std::string>& taps,
                   json* sent) {
    const std::string studio = studio_binary();
    if (!fs::exists(studio)) GTEST_SKIP() << "no " << studio << " (build vkllm-studio)";
    Xvfb x(300);
    ASSERT_TRUE(x.running()) << "Xvfb could not start (install it: scripts/install-deps.sh)";
    const std::string dir = vkllm::test::temp_path("studio-quick-taps-" + name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::string body = script;
    for (size_t at; (at = body.find("$DIR")) != std::string::npos;) body.replace(at, 4, dir);
    std::ofstream(dir + "/script.txt") << "type Hi\nexport " << dir << "/ready.json\n" << body;
    const std::string model = vkllm::test::source_dir() + "/assets/zoo/zoo-dense.gguf";
    const std::string cmd = "DISPLAY=" + x.display() + " '" + studio + "' -m '" + model + "' --script '" + dir +
                            "/script.txt' --temp 0 --config-dir '" + dir + "/config' --exit 2> '" + dir + "/stderr.txt'";
    int status = -1;
    std::thread run([&] { status = std::system(cmd.c_str()); });

    std::string typed_error;
    if (wait_for_file(dir + "/ready.json", 120)) {
        try {
            vkllm::test::XKeyboard keys(x.display());
            const Window w = keys.find_window("vkllm studio");
            if (!w) throw std::runtime_error("no window named vkllm studio");
            keys.tap(w, taps);
        } catch (const std::exception& e) {
            typed_error = e.what();
        }
    }
    run.join();
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_text(dir + "/stderr.txt");
    ASSERT_TRUE(typed_error.empty()) << typed_error;
    ASSERT_TRUE(fs::exists(dir + "/sent.json")) << read_text(dir + "/stderr.txt");
    *sent = json::parse(read_text(dir + "/sent.json"));
}

std::vector<std::string> user_messages(const json& sent) {
    std::vector<std::string> user;
    for (const json& m : sent["messages"])
        if (m["role"] == "user") user.push_back(m["text"].get<std::string>());
    return user;
}

// The taps arrive during an answer of up to 200 tokens; the script's Enter after it sends the box.
// Sets `sent_text` to that second user message.
void sent_after_taps(const std::string& name, const std::vector<std::string>& taps, std::string* sent_text) {
    json sent;
    run_with_taps(name, "tokens 200\nsend Once upon a time\nkey enter\nexport $DIR/sent.json\n", taps, &sent);
    if (::testing::Test::HasFatalFailure() || ::testing::Test::IsSkipped()) return;
    const std::vector<std::string> user = user_messages(sent);
    ASSERT_EQ(user.size(), 2u) << sent["messages"].dump(1);
    EXPECT_EQ(user[0], "Once upon a time");
    EXPECT_EQ(sent["chat"]["input"].get<std::string>(), "") << "the box clears after sending";
    *sent_text = user[1];
}

}  // namespace

TEST(StudioChat, QuickTapsWithinOneFrameAreAllKept) {
    std::string text;
    sent_after_taps("letters", {"space", "t", "h", "e", "r", "e", "space", "4", "2", "space", "z", "o", "o"}, &text);
    if (HasFatalFailure() || IsSkipped()) return;
    EXPECT_EQ(text, "Hi there 42 zoo") << "every tap, in order";
}

// Characters and editing keys within one frame: each BackSpace deletes what was typed before it,
// not what comes after, and the second of two BackSpaces counts.
TEST(StudioChat, QuickTapsKeepKeysAndCharactersInOrder) {
    std::string text;
    sent_after_taps("backspace", {"a", "b", "c", "d", "BackSpace", "BackSpace", "e", "f"}, &text);
    if (HasFatalFailure() || IsSkipped()) return;
    EXPECT_EQ(text, "Hiabef");
}

// The same key tapped twice within one frame acts twice: a letter types twice, and an arrow moves
// the cursor twice (an arrow acts through the key's state, not a character, like BackSpace).
TEST(StudioChat, QuickTapsOfTheSameKeyActTwice) {
    std::string text;
    sent_after_taps("double", {"space", "h", "e", "l", "l", "o", "Left", "Left", "y"}, &text);
    if (HasFatalFailure() || IsSkipped()) return;
    EXPECT_EQ(text, "Hi helylo");
}

// Enter sends and the box keeps the keyboard: letters tapped right after the Enter, in the same
// batch, are in the box (while the answer runs). The script idles on cheap lines meanwhile, so
// that the tapped Enter finds no answer running; the export waits for the answer it started.
TEST(StudioChat, LettersRightAfterEnterStayInTheBox) {
    std::string idle;
    for (int i = 0; i < 20; ++i) idle += "tokens 24\n";
    json sent;
    run_with_taps("enter", idle + "export $DIR/sent.json\n", {"Return", "n", "e", "x", "t"}, &sent);
    if (HasFatalFailure() || IsSkipped()) return;
    const std::vector<std::string> user = user_messages(sent);
    ASSERT_EQ(user.size(), 1u) << sent["messages"].dump(1);
    EXPECT_EQ(user[0], "Hi");
    EXPECT_EQ(sent["chat"]["input"].get<std::string>(), "next") << "the letters typed right after Enter";
}
