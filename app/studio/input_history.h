// The chat box's memory of what was sent: Up in an empty box brings back the last message,
// Up again the one before, Down walks forward and past the newest back to an empty box.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace vkllm::studio {

class InputHistory {
public:
    // A message was sent (an empty one or a repeat of the newest is not kept twice).
    void add(const std::string& text);
    // The text the box should hold after Up (`up`) or Down with `current` in it; nothing when
    // the key should act as usual (move the cursor): Up recalls only from an empty box or one
    // still holding a recalled message unchanged.
    std::optional<std::string> recall(const std::string& current, bool up);
    const std::vector<std::string>& sent() const { return sent_; }

private:
    std::vector<std::string> sent_;
    int at_ = -1;  // the recalled entry shown, -1: none
};

}  // namespace vkllm::studio
