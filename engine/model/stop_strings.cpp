// StopStrings: a stop string is never released, and no text that might begin one is released
// before it is known not to.
#include "model/stop_strings.h"

#include <algorithm>
#include <stdexcept>

namespace vkllm::model {

StopStrings::StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {
    for (const std::string& s : stops_)
        if (s.empty()) throw std::invalid_argument("a stop string must not be empty");
}

std::string StopStrings::push(const std::string& text) {
    if (stopped_) return {};
    pending_ += text;
    size_t first_stop = std::string::npos;
    for (const std::string& s : stops_) first_stop = std::min(first_stop, pending_.find(s));
    if (first_stop != std::string::npos) {
        stopped_ = true;
        std::string out = pending_.substr(0, first_stop);
        pending_.clear();
        return out;
    }
    // The earliest position whose tail is a proper prefix of some stop string; no stop string
    // is contained in pending_, so only tails shorter than the longest one can qualify.
    size_t hold = pending_.size();
    for (const std::string& s : stops_) {
        const size_t from = pending_.size() >= s.size() ? pending_.size() - s.size() + 1 : 0;
        for (size_t i = from; i < hold; ++i)
            if (s.compare(0, pending_.size() - i, pending_, i) == 0) {
                hold = i;
                break;
            }
    }
    std::string out = pending_.substr(0, hold);
    pending_.erase(0, hold);
    return out;
}

std::string StopStrings::finish() {
    std::string out;
    out.swap(pending_);
    return stopped_ ? std::string() : out;
}

}  // namespace vkllm::model
