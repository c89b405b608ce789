// A conversation on disk: the JSON `vkllm chat` writes with /save and reads with /load,
// {"format": "vkllm-chat", "version": 1, "messages": [{"role", "content"}, ...]}: an optional
// system message first, then user and assistant in turn.
#pragma once

#include <string>
#include <vector>

#include "vkllm/chat_template.h"

namespace vkllm::studio {

// The document, indented by two as `vkllm chat` writes it (text that is not UTF-8 saved as U+FFFD).
std::string conversation_json(const std::vector<ChatMessage>& messages);
// The messages of a document; throws std::runtime_error saying what is wrong with it (not JSON,
// another format, a message that is not {role, content}, roles out of turn).
std::vector<ChatMessage> parse_conversation(const std::string& text);
// Reads a file (at most 64 MiB, as `vkllm chat`'s /load) and parses it; the error names the file.
std::vector<ChatMessage> read_conversation(const std::string& path);
// Writes beside the file and renames, so a failed write leaves no half file.
void write_conversation(const std::string& path, const std::vector<ChatMessage>& messages);

}  // namespace vkllm::studio
