// Streaming text out of token pieces without ever cutting a UTF-8 character in two.
#pragma once

#include <string>

namespace vkllm {

// Turns a stream of token pieces into text that never ends inside a UTF-8 character: push()
// returns the complete characters received so far and keeps an unfinished one for later.
class Utf8Decoder {
public:
    std::string push(const std::string& piece);
    std::string flush();  // whatever is still held (an unfinished character at the very end)
    void reset() { pending_.clear(); }

private:
    std::string pending_;
};

}  // namespace vkllm
