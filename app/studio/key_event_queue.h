// Keyboard events held in arrival order and handed to ImGui a frame's worth at a time, so that
// quick taps survive an ImGui that reads the keyboard as state once per frame (Debian's 1.86).
// Such an ImGui loses two kinds of order within one frame: a key pressed and released (or
// released and pressed again) shows only its last state, so a double tap counts once; and the
// frame's characters are applied before its keys, so "Backspace, e" in one frame deletes the
// 'e'. Each frame therefore takes events from the front of the queue until the next one would
// be a second change of a key already changed this frame, or a character after a key change;
// the rest waits for the next frames. A character before a key change in the same frame keeps
// its order (characters go first), so typing costs about a frame per tap. ImGui 1.87's input
// queue trickles events by the same rules.
//
// No ImGui or GLFW here: the studio's window feeds it GLFW's callbacks and drains it into
// ImGui's, and the tests drive it directly.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <set>

namespace vkllm::studio {

struct KeyEvent {
    enum class Kind { Key, Char };
    Kind kind = Kind::Key;
    int key = 0, scancode = 0, action = 0, mods = 0;  // Kind::Key, GLFW's values
    unsigned codepoint = 0;                            // Kind::Char
};

class KeyEventQueue {
public:
    // The action values that change a key's state (GLFW_PRESS, GLFW_RELEASE); any other action
    // (GLFW_REPEAT) leaves the state as it is and never holds the queue back.
    KeyEventQueue(int press_action, int release_action) : press_(press_action), release_(release_action) {}

    void push_key(int key, int scancode, int action, int mods) { events_.push_back({KeyEvent::Kind::Key, key, scancode, action, mods, 0}); }
    void push_char(unsigned codepoint) { events_.push_back({KeyEvent::Kind::Char, 0, 0, 0, 0, codepoint}); }
    bool empty() const { return events_.empty(); }
    void clear() { events_.clear(); }
    size_t size() const { return events_.size(); }

    // Hands `sink` this frame's events, in order, and keeps the rest; returns how many went.
    size_t deliver_frame(const std::function<void(const KeyEvent&)>& sink) {
        std::set<int> changed;  // keys pressed or released this frame
        size_t n = 0;
        while (!events_.empty()) {
            const KeyEvent& e = events_.front();
            if (e.kind == KeyEvent::Kind::Key && changes_state(e)) {
                if (changed.count(e.key)) break;
                changed.insert(e.key);
            } else if (e.kind == KeyEvent::Kind::Char && !changed.empty()) {
                break;
            }
            const KeyEvent out = e;
            events_.pop_front();
            sink(out);
            ++n;
        }
        return n;
    }

private:
    bool changes_state(const KeyEvent& e) const { return e.action == press_ || e.action == release_; }

    int press_, release_;
    std::deque<KeyEvent> events_;
};

}  // namespace vkllm::studio
