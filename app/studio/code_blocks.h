// Fenced code blocks (``` ... ```) in a chat message, so the chat can draw them set apart.
#pragma once

#include <string>
#include <vector>

namespace vkllm::studio {

// One stretch of a message: prose or the inside of a fence. [begin, end) are byte offsets in
// the message; the fence lines themselves (``` with its language, and the closing ```) belong
// to no segment. A fence still open at the end (an answer streaming) runs to the end.
struct TextSegment {
    size_t begin = 0, end = 0;
    bool code = false;
    std::string language;  // the word after the opening ```, may be empty
};
// A fence is a line whose first non-blank characters are ``` (Markdown's rule, indented at most
// three spaces); the segments cover the message in order, empty prose segments left out.
std::vector<TextSegment> split_code_blocks(const std::string& text);

}  // namespace vkllm::studio
