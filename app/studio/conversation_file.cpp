#include "conversation_file.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "input_file.h"
#include "json_text.h"

namespace vkllm::studio {

std::string conversation_json(const std::vector<ChatMessage>& messages) {
    nlohmann::json list = nlohmann::json::array();
    for (const ChatMessage& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
    const nlohmann::json doc = {{"format", "vkllm-chat"}, {"version", 1}, {"messages", list}};
    return app::json_text(doc, 2) + "\n";
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
    if (!doc.contains("messages") || !doc["messages"].is_array())
        throw std::runtime_error("\"messages\" must be a list of {\"role\", \"content\"}");
    std::vector<ChatMessage> out;
    for (const nlohmann::json& m : doc["messages"]) {
        const size_t i = out.size();
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
            !m["content"].is_string())
            throw std::runtime_error("message " + std::to_string(i) + " is not {\"role\": text, \"content\": text}");
        const std::string role = m["role"].get<std::string>();
        const std::string expected = i == 0 || out[i - 1].role != "user" ? "user" : "assistant";
        if (!(role == "system" && i == 0) && role != expected)
            throw std::runtime_error("message " + std::to_string(i) + " has role \"" + role + "\" where \"" + expected +
                                     "\" belongs (a system message first, then user and assistant in turn)");
        out.push_back({role, m["content"].get<std::string>()});
    }
    return out;
}

std::vector<ChatMessage> read_conversation(const std::string& path) {
    const std::string text = app::read_input(path, uint64_t(64) << 20, "conversation");
    try {
        return parse_conversation(text);
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
}

void write_conversation(const std::string& path, const std::vector<ChatMessage>& messages) {
    const std::string temp = path + ".part";
    {
        std::ofstream out(temp, std::ios::binary);
        out << conversation_json(messages);
        if (!out) throw std::runtime_error("cannot write " + path);
    }
    std::error_code ec;
    std::filesystem::rename(temp, path, ec);
    if (ec) {
        std::filesystem::remove(temp, ec);
        throw std::runtime_error("cannot write " + path);
    }
}

}  // namespace vkllm::studio
