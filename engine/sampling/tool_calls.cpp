// Tool calls (vkllm/tool_calls.h): format detection, forced-call grammars, the streaming reader.
#include "vkllm/tool_calls.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <random>

#include <nlohmann/json.hpp>

namespace vkllm {
namespace {

using json = nlohmann::json;

constexpr const char* kHermesOpen = "<tool_call>";
constexpr const char* kHermesClose = "</tool_call>";
constexpr const char* kMistralOpen = "[TOOL_CALLS]";
constexpr const char* kMistralArgs = "[ARGS]";
constexpr const char* kPythonTag = "<|python_tag|>";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t skip_space(const std::string& s, size_t i) {
    while (i < s.size() && is_space(s[i])) ++i;
    return i;
}

// The index just past the JSON object or list starting at s[i], npos when it does not close.
size_t json_end(const std::string& s, size_t i) {
    if (i >= s.size() || (s[i] != '{' && s[i] != '[')) return std::string::npos;
    int depth = 0;
    bool in_string = false;
    for (; i < s.size(); ++i) {
        const char c = s[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            ++depth;
        } else if ((c == '}' || c == ']') && --depth == 0) {
            return i + 1;
        }
    }
    return std::string::npos;
}

// A call id unique within the process: "call_" and 24 letters or digits as OpenAI's look, or
// 9 letters or digits for Mistral (its templates refuse any other id). Drawn from a counter
// mixed by splitmix64 and a per-process random start, so ids do not repeat across restarts.
std::string next_id(ToolFormat format) {
    static std::atomic<uint64_t> counter{std::random_device{}()};
    static const char* kAlphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    uint64_t z = counter.fetch_add(0x9e3779b97f4a7c15ULL);
    std::string id;
    const size_t n = format == ToolFormat::Mistral ? 9 : 24;
    while (id.size() < n) {
        z += 0x9e3779b97f4a7c15ULL;
        uint64_t x = z;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
        x ^= x >> 31;
        for (int i = 0; i < 10 && id.size() < n; ++i, x /= 62) id += kAlphabet[x % 62];
    }
    return format == ToolFormat::Mistral ? id : "call_" + id;
}

// {"name": ..., "<args_key>": {...} or "..."} as a call; nullopt when it is not one.
std::optional<ToolCall> read_call(const json& v, ToolFormat format) {
    if (!v.is_object() || !v.contains("name") || !v["name"].is_string()) return std::nullopt;
    const json* args = nullptr;
    for (const char* key : {"arguments", "parameters"})
        if (v.contains(key)) args = &v[key];
    if (!args) return ToolCall{next_id(format), v["name"].get<std::string>(), "{}"};
    if (args->is_string()) return ToolCall{next_id(format), v["name"].get<std::string>(), args->get<std::string>()};
    if (!args->is_object()) return std::nullopt;
    return ToolCall{next_id(format), v["name"].get<std::string>(), args->dump()};
}

// The JSON value s[i, end) or null when it does not parse.
json parse_at(const std::string& s, size_t i, size_t end) {
    return json::parse(s.begin() + long(i), s.begin() + long(end), nullptr, /*allow_exceptions=*/false);
}

// The longest tail of `s` that begins `marker` (a marker that may still be arriving).
size_t partial_marker(const std::string& s, const std::string& marker) {
    for (size_t n = std::min(s.size(), marker.size() - 1); n > 0; --n)
        if (s.compare(s.size() - n, n, marker, 0, n) == 0) return s.size() - n;
    return s.size();
}

ToolCallReader::Result parse_hermes(const std::string& s) {
    ToolCallReader::Result r;
    size_t pos = 0;
    for (;;) {
        const size_t open = s.find(kHermesOpen, pos);
        r.content += s.substr(pos, open == std::string::npos ? std::string::npos : open - pos);
        if (open == std::string::npos) break;
        const size_t start = skip_space(s, open + std::string(kHermesOpen).size());
        const size_t end = json_end(s, start);
        const std::optional<ToolCall> call = end == std::string::npos ? std::nullopt : read_call(parse_at(s, start, end), ToolFormat::Hermes);
        if (!call) {
            r.content += s.substr(open);  // not a call after all: it stays text
            break;
        }
        r.calls.push_back(*call);
        pos = skip_space(s, end);
        if (s.compare(pos, std::string(kHermesClose).size(), kHermesClose) == 0) pos += std::string(kHermesClose).size();
    }
    return r;
}

ToolCallReader::Result parse_llama3(const std::string& s) {
    ToolCallReader::Result r;
    size_t start = skip_space(s, 0);
    if (s.compare(start, std::string(kPythonTag).size(), kPythonTag) == 0)
        start = skip_space(s, start + std::string(kPythonTag).size());
    const size_t end = json_end(s, start);
    const std::optional<ToolCall> call = end == std::string::npos ? std::nullopt : read_call(parse_at(s, start, end), ToolFormat::Llama3);
    if (!call) {
        r.content = s;
        return r;
    }
    r.calls.push_back(*call);
    r.content = s.substr(skip_space(s, end));
    return r;
}

ToolCallReader::Result parse_mistral(const std::string& s) {
    ToolCallReader::Result r;
    const size_t open = s.find(kMistralOpen);
    r.content = s.substr(0, open);
    if (open == std::string::npos) return r;
    size_t pos = skip_space(s, open + std::string(kMistralOpen).size());
    if (pos < s.size() && s[pos] == '[') {  // a JSON list of calls
        const size_t end = json_end(s, pos);
        const json list = end == std::string::npos ? json() : parse_at(s, pos, end);
        if (list.is_array()) {
            for (const json& v : list)
                if (auto call = read_call(v, ToolFormat::Mistral)) r.calls.push_back(*call);
            if (r.calls.size() == list.size()) {
                r.content += s.substr(skip_space(s, end));
                return r;
            }
        }
        r.calls.clear();
    } else {  // NAME[ARGS]{...}, repeated
        while (pos < s.size()) {
            const size_t args = s.find(kMistralArgs, pos);
            if (args == std::string::npos) break;
            const size_t start = args + std::string(kMistralArgs).size();
            const size_t end = json_end(s, start);
            const json v = end == std::string::npos ? json() : parse_at(s, start, end);
            if (!v.is_object()) break;
            r.calls.push_back({next_id(ToolFormat::Mistral), s.substr(pos, args - pos), v.dump()});
            pos = skip_space(s, end);
            if (s.compare(pos, std::string(kMistralOpen).size(), kMistralOpen) == 0)
                pos = skip_space(s, pos + std::string(kMistralOpen).size());
        }
        if (!r.calls.empty()) {
            r.content += s.substr(pos);
            return r;
        }
    }
    r.content += s.substr(open);  // not calls after all
    return r;
}

}  // namespace

ToolFormat tool_format(const std::string& src) {
    if (src.find(kHermesOpen) != std::string::npos) return ToolFormat::Hermes;
    if (src.find(kMistralOpen) != std::string::npos) return ToolFormat::Mistral;
    if (src.find("<|start_header_id|>") != std::string::npos && src.find("tools") != std::string::npos)
        return ToolFormat::Llama3;
    return ToolFormat::None;
}

const char* to_string(ToolFormat f) {
    switch (f) {
        case ToolFormat::Hermes: return "hermes";
        case ToolFormat::Llama3: return "llama3";
        case ToolFormat::Mistral: return "mistral";
        case ToolFormat::None: break;
    }
    return "none";
}

ForcedCall forced_call(ToolFormat format, const std::string& tools_json, const std::string& name) {
    const json tools = json::parse(tools_json, nullptr, /*allow_exceptions=*/false);
    if (!tools.is_array()) throw std::invalid_argument("forced_call: the tools are not a JSON list");
    for (const json& t : tools)
        if (!t.is_object() || !t.contains("function") || !t["function"].is_object() || !t["function"].contains("name") ||
            !t["function"]["name"].is_string())
            throw std::invalid_argument("forced_call: a tool is not {\"type\": \"function\", \"function\": {\"name\"}}");
    // One alternative per function: {"name": its name, arguments: its parameters' schema}.
    const std::string args_key = format == ToolFormat::Llama3 ? "parameters" : "arguments";
    json options = json::array();
    for (const json& t : tools) {
        const json& f = t["function"];
        const std::string fname = f["name"].get<std::string>();
        if (!name.empty() && fname != name) continue;
        const json params = f.contains("parameters") && !f["parameters"].is_null() ? f["parameters"]
                                                                                   : json{{"type", "object"}};
        options.push_back({{"type", "object"},
                           {"properties", {{"name", {{"const", fname}}}, {args_key, params}}},
                           {"required", {"name", args_key}},
                           {"additionalProperties", false}});
    }
    if (options.empty()) throw std::invalid_argument("forced_call: no tool is named '" + name + "'");
    json call = {{"anyOf", options}};
    switch (format) {
        case ToolFormat::Hermes: return {std::string(kHermesOpen) + "\n", JsonGrammar::from_schema(call.dump())};
        case ToolFormat::Mistral:
            return {kMistralOpen,
                    JsonGrammar::from_schema(json{{"type", "array"}, {"items", call}, {"minItems", 1}, {"maxItems", 1}}.dump())};
        default: return {"", JsonGrammar::from_schema(call.dump())};
    }
}

ToolCallReader::ToolCallReader(ToolFormat format, std::string prefix)
    : format_(format), text_(prefix), prefix_(std::move(prefix)), released_(prefix_.size()) {}

size_t ToolCallReader::hold_from() const {
    switch (format_) {
        case ToolFormat::Hermes:
        case ToolFormat::Mistral: {
            const std::string marker = format_ == ToolFormat::Hermes ? kHermesOpen : kMistralOpen;
            const size_t at = text_.find(marker);
            return at != std::string::npos ? at : partial_marker(text_, marker);
        }
        case ToolFormat::Llama3: {
            // A call is the whole answer: held while the answer may still be one.
            if (released_ > prefix_.size()) return text_.size();
            const size_t start = skip_space(text_, 0);
            if (start == text_.size() || text_[start] == '{') return 0;
            const std::string tag = kPythonTag;
            if (tag.compare(0, std::min(tag.size(), text_.size() - start), text_, start, tag.size()) == 0) return 0;
            return text_.size();
        }
        case ToolFormat::None: break;
    }
    return text_.size();
}

std::string ToolCallReader::push(const std::string& text) {
    text_ += text;
    const size_t hold = std::max(hold_from(), released_);
    std::string out = text_.substr(released_, hold - released_);
    released_ = hold;
    return out;
}

ToolCallReader::Result ToolCallReader::finish() {
    const size_t start = std::min(hold_from(), released_);
    const std::string held = text_.substr(start);
    Result r = format_ == ToolFormat::Hermes    ? parse_hermes(held)
               : format_ == ToolFormat::Llama3  ? parse_llama3(held)
               : format_ == ToolFormat::Mistral ? parse_mistral(held)
                                                : Result{held, {}};
    if (r.calls.empty()) r.content = text_.substr(released_);  // no call: the held text was content
    // Text released before the held part is not repeated.
    released_ = text_.size();
    return r;
}

}  // namespace vkllm
