// A saved conversation: the JSON file `vkllm chat` writes with /save and reads with /load, and
// vkllm-studio's File > Save and Open conversation,
//   {"format": "vkllm-chat", "version": 1, "messages": [{"role": ..., "content": ...}, ...]}
// indented by two, with a final newline. The messages are an optional system message first, then
// user and assistant in turn (the last may be a user message that was never answered).
#pragma once

#include <string>
#include <vector>

#include "vkllm/chat_template.h"

namespace vkllm::app {

// The document for these messages (text that is not UTF-8 written as U+FFFD).
std::string conversation_json(const std::vector<ChatMessage>& messages);

// The messages of a document. Throws std::runtime_error saying what is wrong: not JSON, another
// format, a version this reader does not know, a message that is not {role, content}, roles out
// of turn. "version" may be left out (read as 1).
std::vector<ChatMessage> parse_conversation(const std::string& text);

// Reads `path` (at most kConversationFileMax) and parses it. Throws InputError when it cannot be
// read, std::runtime_error "cannot load <path>: <what is wrong>" when it is not a conversation.
std::vector<ChatMessage> read_conversation(const std::string& path);

// Writes the document to a temporary file beside `path` and renames it over `path`, so a failed
// write leaves the old file as it was. Throws std::runtime_error naming the file and the reason.
void write_conversation(const std::string& path, const std::vector<ChatMessage>& messages);

}  // namespace vkllm::app
