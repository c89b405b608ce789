// Releasing generated text while holding back what could still begin a stop string.
#pragma once

#include <string>
#include <vector>

namespace vkllm::model {

class StopStrings {
public:
    // Throws std::invalid_argument for an empty stop string (it would match before any text).
    explicit StopStrings(std::vector<std::string> stops);

    // Appends complete text; returns what can be released now: text before the earliest stop
    // string (then stopped() is true and nothing more is released), or everything except a
    // tail that is the beginning of some stop string.
    std::string push(const std::string& text);
    // Releases the held tail (generation ended for another reason); empty once stopped.
    std::string finish();
    bool stopped() const { return stopped_; }

private:
    std::vector<std::string> stops_;
    std::string pending_;  // received, not yet released
    bool stopped_ = false;
};

}  // namespace vkllm::model
