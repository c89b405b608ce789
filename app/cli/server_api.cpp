#include "server_api.h"

#include <limits>

namespace vkllm::cli::server {
namespace {

using json = nlohmann::json;

ApiError bad_field(const std::string& field, const std::string& what) {
    return ApiError(400, "'" + field + "' " + what, field, "invalid_type");
}

// The value of an optional field; nullptr when absent or null (JSON null means "not given").
const json* field(const json& body, const char* name) {
    auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
}

bool read_bool(const json& body, const char* name, bool fallback) {
    const json* v = field(body, name);
    if (!v) return fallback;
    if (!v->is_boolean()) throw bad_field(name, "must be a boolean");
    return v->get<bool>();
}

// A number in [lo, hi] (inclusive).
float read_number(const json& body, const char* name, float fallback, double lo, double hi) {
    const json* v = field(body, name);
    if (!v) return fallback;
    if (!v->is_number()) throw bad_field(name, "must be a number");
    const double x = v->get<double>();
    if (!(x >= lo && x <= hi))
        throw ApiError(400, "'" + std::string(name) + "' must be between " + json(lo).dump() + " and " + json(hi).dump() +
                                ", got " + v->dump(), name, "invalid_value");
    return float(x);
}

int64_t read_integer(const json& body, const char* name, int64_t fallback, int64_t lo, int64_t hi) {
    const json* v = field(body, name);
    if (!v) return fallback;
    if (!v->is_number_integer()) throw bad_field(name, "must be an integer");
    // Unsigned values beyond int64 compare as large numbers.
    const bool too_big = v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max());
    const int64_t x = too_big ? std::numeric_limits<int64_t>::max() : v->get<int64_t>();
    if (x < lo || x > hi)
        throw ApiError(400, "'" + std::string(name) + "' must be between " + std::to_string(lo) + " and " +
                                std::to_string(hi) + ", got " + v->dump(), name, "invalid_value");
    return x;
}

// A message's content: text, or a list of parts of which the text parts count.
std::string read_content(const json& content, const std::string& param) {
    if (content.is_null()) return "";
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) throw bad_field(param, "must be a string or a list of content parts");
    std::string text;
    for (const json& part : content) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
            throw ApiError(400, "'" + param + "' parts must be {\"type\": \"text\", \"text\": ...} (this server reads text only)",
                           param, "invalid_type");
        text += part["text"].get<std::string>();
    }
    return text;
}

std::vector<ChatMessage> read_messages(const json& body) {
    const json* v = field(body, "messages");
    if (!v) throw ApiError(400, "'messages' is required", "messages", "missing_required_parameter");
    if (!v->is_array()) throw bad_field("messages", "must be a list of messages");
    if (v->empty()) throw ApiError(400, "'messages' must hold at least one message", "messages", "invalid_value");
    std::vector<ChatMessage> out;
    for (size_t i = 0; i < v->size(); ++i) {
        const json& m = (*v)[i];
        const std::string param = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) throw bad_field(param, "must be an object");
        if (!m.contains("role") || !m["role"].is_string()) throw bad_field(param + ".role", "must be a string");
        const std::string role = m["role"].get<std::string>();
        if (role != "system" && role != "developer" && role != "user" && role != "assistant" && role != "tool")
            throw ApiError(400, "'" + param + ".role' must be system, developer, user, assistant or tool, got '" + role + "'",
                           param + ".role", "invalid_value");
        out.push_back({role == "developer" ? "system" : role, read_content(m.value("content", json()), param + ".content")});
    }
    return out;
}

void read_prompt(const json& body, CompletionRequest& r) {
    const json* v = field(body, "prompt");
    if (!v) throw ApiError(400, "'prompt' is required", "prompt", "missing_required_parameter");
    // A string, a list of one string, or a list of token ids.
    const json* p = v;
    if (v->is_array() && v->size() == 1 && (*v)[0].is_string()) p = &(*v)[0];
    if (p->is_string()) {
        r.prompt = p->get<std::string>();
        return;
    }
    if (p->is_array() && !p->empty()) {
        for (const json& t : *p) {
            if (!t.is_number_integer()) throw bad_field("prompt", "must be a string or a list of token ids");
            // Checked as the 64-bit number it is: an id past int32 is out of every vocabulary,
            // never truncated into one.
            const bool fits = t.is_number_unsigned() ? t.get<uint64_t>() <= uint64_t(std::numeric_limits<int32_t>::max())
                                                     : t.get<int64_t>() >= std::numeric_limits<int32_t>::min() &&
                                                           t.get<int64_t>() <= std::numeric_limits<int32_t>::max();
            if (!fits)
                throw ApiError(400, "token id " + t.dump() + " is outside the vocabulary", "prompt", "invalid_value");
            r.prompt_tokens.push_back(int32_t(t.get<int64_t>()));
        }
        r.prompt_is_tokens = true;
        return;
    }
    throw bad_field("prompt", "must be a string, a list of one string, or a list of token ids");
}

std::vector<std::string> read_stop(const json& body) {
    const json* v = field(body, "stop");
    if (!v) return {};
    // An empty stop string would match everywhere: it is no stop (as llama-server reads it).
    if (v->is_string()) return v->get<std::string>().empty() ? std::vector<std::string>{} : std::vector{v->get<std::string>()};
    if (!v->is_array()) throw bad_field("stop", "must be a string or a list of strings");
    std::vector<std::string> out;
    for (const json& s : *v) {
        if (!s.is_string()) throw bad_field("stop", "must be a string or a list of strings");
        if (!s.get<std::string>().empty()) out.push_back(s.get<std::string>());
    }
    return out;
}

}  // namespace

json error_body(const ApiError& e) {
    return {{"error",
             {{"message", e.what()},
              {"type", e.type},
              {"param", e.param.empty() ? json() : json(e.param)},
              {"code", e.code.empty() ? json() : json(e.code)}}}};
}

CompletionRequest parse_request(Endpoint endpoint, const std::string& body_text, uint64_t seed) {
    json body;
    try {
        body = json::parse(body_text);
    } catch (const json::exception& e) {
        // A syntax error, invalid UTF-8, or a number past double's range (1e400): the message
        // may quote the bad bytes, which the error body's writer replaces (app::json_text).
        throw ApiError(400, std::string("the body is not valid JSON: ") + e.what(), "", "invalid_json");
    }
    if (!body.is_object()) throw ApiError(400, "the body must be a JSON object", "", "invalid_json");

    CompletionRequest r;
    r.endpoint = endpoint;
    if (const json* m = field(body, "model")) {
        if (!m->is_string()) throw bad_field("model", "must be a string");
        r.model = m->get<std::string>();
    }
    if (endpoint == Endpoint::Chat)
        r.messages = read_messages(body);
    else
        read_prompt(body, r);

    if (read_integer(body, "n", 1, 1, 1000) != 1)
        throw ApiError(400, "'n' must be 1 (this server answers with one choice)", "n", "invalid_value");
    r.stream = read_bool(body, "stream", false);
    if (const json* so = field(body, "stream_options")) {
        if (!so->is_object()) throw bad_field("stream_options", "must be an object");
        r.include_usage = read_bool(*so, "include_usage", false);
    }

    GenerateOptions& o = r.options;
    SamplerParams& s = o.sampler;
    const int64_t max_int = std::numeric_limits<int32_t>::max();
    int64_t max_tokens = read_integer(body, "max_tokens", -1, 1, max_int);
    max_tokens = read_integer(body, "max_completion_tokens", max_tokens, 1, max_int);
    o.max_tokens = int(max_tokens);
    s.temperature = read_number(body, "temperature", s.temperature, 0, 2);
    s.top_p = read_number(body, "top_p", s.top_p, 0, 1);
    s.top_k = int(read_integer(body, "top_k", s.top_k, 0, max_int));
    s.min_p = read_number(body, "min_p", s.min_p, 0, 1);
    s.presence_penalty = read_number(body, "presence_penalty", s.presence_penalty, -2, 2);
    s.frequency_penalty = read_number(body, "frequency_penalty", s.frequency_penalty, -2, 2);
    s.repeat_penalty = read_number(body, "repeat_penalty", s.repeat_penalty, 0.01, 10);
    s.seed = uint64_t(read_integer(body, "seed", int64_t(seed & uint64_t(std::numeric_limits<int64_t>::max())),
                                   std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()));
    o.stop = read_stop(body);
    try {
        validate(s);
    } catch (const std::invalid_argument& e) {
        throw ApiError(400, e.what(), "", "invalid_value");
    }
    return r;
}

const char* finish_reason(StopReason reason) {
    switch (reason) {
        case StopReason::EndOfGeneration:
        case StopReason::StopString: return "stop";
        default: return "length";
    }
}

json usage_json(int prompt_tokens, int completion_tokens) {
    return {{"prompt_tokens", prompt_tokens},
            {"completion_tokens", completion_tokens},
            {"total_tokens", prompt_tokens + completion_tokens}};
}

namespace {

json header_json(const ResponseHeader& h, bool chunk) {
    const char* object = h.endpoint == Endpoint::Completion ? "text_completion"
                         : chunk                           ? "chat.completion.chunk"
                                                           : "chat.completion";
    return {{"id", h.id}, {"object", object}, {"created", h.created}, {"model", h.model}};
}

}  // namespace

json completion_json(const ResponseHeader& h, const std::string& text, const char* finish, int prompt_tokens,
                     int completion_tokens) {
    json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish}};
    if (h.endpoint == Endpoint::Chat)
        choice["message"] = {{"role", "assistant"}, {"content", text}};
    else
        choice["text"] = text;
    json out = header_json(h, false);
    out["choices"] = json::array({choice});
    out["usage"] = usage_json(prompt_tokens, completion_tokens);
    return out;
}

json chunk_json(const ResponseHeader& h, const std::string& text, const char* finish, bool role_only) {
    json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish ? json(finish) : json()}};
    if (h.endpoint == Endpoint::Chat) {
        json delta = json::object();
        if (role_only) delta = {{"role", "assistant"}, {"content", ""}};
        else if (!finish) delta["content"] = text;
        choice["delta"] = delta;
    } else {
        choice["text"] = finish ? "" : text;
    }
    json out = header_json(h, true);
    out["choices"] = json::array({choice});
    return out;
}

json usage_chunk_json(const ResponseHeader& h, int prompt_tokens, int completion_tokens) {
    json out = header_json(h, true);
    out["choices"] = json::array();
    out["usage"] = usage_json(prompt_tokens, completion_tokens);
    return out;
}

}  // namespace vkllm::cli::server
