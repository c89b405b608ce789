#include "code_blocks.h"

namespace vkllm::studio {

namespace {

// The line starting at `at` opens or closes a fence: up to three spaces, then ```.
bool fence_at(const std::string& text, size_t at, size_t& after_ticks) {
    size_t i = at;
    while (i < text.size() && i - at < 3 && text[i] == ' ') ++i;
    if (text.compare(i, 3, "```") != 0) return false;
    after_ticks = i + 3;
    return true;
}

size_t line_end(const std::string& text, size_t at) {
    const size_t nl = text.find('\n', at);
    return nl == std::string::npos ? text.size() : nl;
}

}  // namespace

std::vector<TextSegment> split_code_blocks(const std::string& text) {
    std::vector<TextSegment> out;
    auto push = [&](size_t b, size_t e, bool code, const std::string& lang) {
        if (b < e || code) out.push_back({b, e, code, lang});
    };
    size_t start = 0;  // of the current segment
    bool in_code = false;
    std::string language;
    for (size_t line = 0; line <= text.size();) {
        const size_t end = line_end(text, line);
        size_t ticks = 0;
        if (fence_at(text, line, ticks)) {
            // The segment ends before the fence line; a newline just before it belongs to no one.
            size_t seg_end = line;
            if (seg_end > start && text[seg_end - 1] == '\n') --seg_end;
            if (!in_code) {
                push(start, seg_end, false, "");
                language = text.substr(ticks, end - ticks);
                while (!language.empty() && (language.back() == ' ' || language.back() == '\r')) language.pop_back();
                while (!language.empty() && language.front() == ' ') language.erase(0, 1);
            } else {
                push(start, seg_end, true, language);
                language.clear();
            }
            in_code = !in_code;
            start = end < text.size() ? end + 1 : end;
        }
        if (end >= text.size()) break;
        line = end + 1;
    }
    if (in_code) push(start, text.size(), true, language);
    else push(start, text.size(), false, "");
    return out;
}

}  // namespace vkllm::studio
