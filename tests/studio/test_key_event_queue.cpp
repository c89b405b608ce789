// The studio's keyboard queue: what each frame hands ImGui from a burst of taps.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "key_event_queue.h"

using vkllm::studio::KeyEvent;
using vkllm::studio::KeyEventQueue;

namespace {

constexpr int kRelease = 0, kPress = 1, kRepeat = 2;  // GLFW's values

// A tap as a keyboard sends it: press, the character (when the key types one), release.
void tap(KeyEventQueue& q, int key, char c) {
    q.push_key(key, 0, kPress, 0);
    if (c) q.push_char(unsigned(c));
    q.push_key(key, 0, kRelease, 0);
}

// Each frame's events, one string per frame: "+K" press, "-K" release, "*K" repeat, "c" a character.
std::vector<std::string> frames(KeyEventQueue& q) {
    std::vector<std::string> out;
    while (!q.empty()) {
        std::string f;
        const size_t n = q.deliver_frame([&](const KeyEvent& e) {
            if (e.kind == KeyEvent::Kind::Char) f += char(e.codepoint);
            else f += std::string(e.action == kPress ? "+" : e.action == kRelease ? "-" : "*") + char(e.key);
            f += ' ';
        });
        EXPECT_GT(n, 0u) << "a frame must take at least one event";
        if (n == 0) break;
        out.push_back(f);
    }
    return out;
}

}  // namespace

TEST(KeyEventQueue, AKeyChangesOncePerFrameAndCharactersNeverFollowAKeyChange) {
    KeyEventQueue q(kPress, kRelease);
    tap(q, 'A', 'a');
    tap(q, 'B', 'b');
    tap(q, 'B', 'b');  // the same key again
    tap(q, '<', 0);    // an editing key: no character
    tap(q, '<', 0);
    const std::vector<std::string> want = {"+A ", "a -A +B ", "b -B ", "+B ", "b -B +< ", "-< ", "+< ", "-< "};
    EXPECT_EQ(frames(q), want);
}

TEST(KeyEventQueue, CharactersBeforeKeysShareAFrameAndRepeatsNeverHoldBack) {
    KeyEventQueue q(kPress, kRelease);
    q.push_char('x');
    q.push_char('y');
    q.push_key('<', 0, kPress, 0);
    q.push_key('<', 0, kRepeat, 0);
    q.push_key('<', 0, kRepeat, 0);
    q.push_key('<', 0, kRelease, 0);
    const std::vector<std::string> want = {"x y +< *< *< ", "-< "};
    EXPECT_EQ(frames(q), want);
}

TEST(KeyEventQueue, AnEmptyQueueDeliversNothing) {
    KeyEventQueue q(kPress, kRelease);
    EXPECT_EQ(q.deliver_frame([](const KeyEvent&) { FAIL() << "no event expected"; }), 0u);
    q.push_char('z');
    q.clear();
    EXPECT_TRUE(q.empty());
}
