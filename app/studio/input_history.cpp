#include "input_history.h"

namespace vkllm::studio {

void InputHistory::add(const std::string& text) {
    at_ = -1;
    if (text.empty() || (!sent_.empty() && sent_.back() == text)) return;
    sent_.push_back(text);
}

std::optional<std::string> InputHistory::recall(const std::string& current, bool up) {
    const bool showing = at_ >= 0 && at_ < int(sent_.size()) && sent_[size_t(at_)] == current;
    if (!showing) at_ = -1;
    if (up) {
        if (sent_.empty()) return std::nullopt;
        if (!showing && !current.empty()) return std::nullopt;  // the user's own text: a cursor move
        at_ = showing ? std::max(at_ - 1, 0) : int(sent_.size()) - 1;
        return sent_[size_t(at_)];
    }
    if (!showing) return std::nullopt;
    if (at_ + 1 < int(sent_.size())) return sent_[size_t(++at_)];
    at_ = -1;
    return std::string();  // past the newest: the empty box again
}

}  // namespace vkllm::studio
