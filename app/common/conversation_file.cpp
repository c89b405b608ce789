#include "conversation_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "input_file.h"
#include "json_text.h"

namespace vkllm::app {

namespace {

constexpr int kVersion = 1;  // the only version so far

}  // namespace

std::string conversation_json(const std::vector<ChatMessage>& messages) {
    nlohmann::json list = nlohmann::json::array();
    for (const ChatMessage& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
    const nlohmann::json doc = {{"format", "vkllm-chat"}, {"version", kVersion}, {"messages", list}};
    return json_text(doc, 2) + "\n";
}

std::vector<ChatMessage> parse_conversation(const std::string& text) {
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw std::runtime_error(std::string("not JSON: ") + e.what());
    }
    if (!doc.is_object() || !doc.contains("format") || doc["format"] != "vkllm-chat")
        throw std::runtime_error("not a vkllm chat conversation (no \"format\": \"vkllm-chat\")");
    if (doc.contains("version") && doc["version"] != kVersion)
        throw std::runtime_error("\"version\": " + doc["version"].dump() + " is not one this vkllm reads (" +
                                 std::to_string(kVersion) + ")");
    if (!doc.contains("messages") || !doc["messages"].is_array())
        throw std::runtime_error("\"messages\" must be a list of {\"role\", \"content\"}");
    std::vector<ChatMessage> out;
    for (const nlohmann::json& m : doc["messages"]) {
        const size_t i = out.size();
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
            !m["content"].is_string())
            throw std::runtime_error("message " + std::to_string(i) + " is not {\"role\": text, \"content\": text}");
        const std::string role = m["role"].get<std::string>();
        // A user message opens the conversation (after the system message) and follows each answer.
        const std::string expected = i == 0 || out[i - 1].role != "user" ? "user" : "assistant";
        if (!(role == "system" && i == 0) && role != expected)
            throw std::runtime_error("message " + std::to_string(i) + " has role \"" + role + "\" where \"" + expected +
                                     "\" belongs (a system message first, then user and assistant in turn)");
        out.push_back({role, m["content"].get<std::string>()});
    }
    return out;
}

std::vector<ChatMessage> read_conversation(const std::string& path) {
    const std::string text = read_input(path, kConversationFileMax, "conversation");  // InputError names the path
    try {
        return parse_conversation(text);
    } catch (const std::runtime_error& e) {
        throw std::runtime_error("cannot load " + path + ": " + e.what());
    }
}

void write_conversation(const std::string& path, const std::vector<ChatMessage>& messages) {
    const std::string text = conversation_json(messages);
    // Beside the target (rename is atomic within one file system), named for this process.
    const std::string temp = path + ".tmp." + std::to_string(getpid());
    auto fail = [&](int error) {
        std::remove(temp.c_str());
        throw std::runtime_error("cannot write " + path + ": " + std::strerror(error));
    };
    FILE* f = std::fopen(temp.c_str(), "wb");
    if (!f) fail(errno);
    errno = 0;
    const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0;
    const int write_error = errno ? errno : EIO;
    if (std::fclose(f) != 0 || !written) fail(written ? (errno ? errno : EIO) : write_error);
    if (std::rename(temp.c_str(), path.c_str()) != 0) fail(errno);
}

}  // namespace vkllm::app
