// JSON text that is always valid UTF-8. Text from a model is bytes until it is shown: a sampled
// token may end inside a character, or a vocabulary may hold partial UTF-8. Every JSON writer of
// the front-ends dumps through here, so an invalid sequence becomes U+FFFD (as OpenAI's and
// llama-server's streams do) instead of an exception in the middle of an answer.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace vkllm::app {

// `value` as JSON text; indent < 0: one line. Invalid UTF-8 in strings is replaced by U+FFFD.
template <class Json>
std::string json_text(const Json& value, int indent = -1) {
    return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace vkllm::app
