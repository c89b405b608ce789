#include "server_api.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <set>

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

// The messages as the chat template sees them: what read_messages() read, plus a message's
// name, tool calls and tool call id, which are passed through (never dropped). The index of the
// first message with tool calls or the tool role, -1 when none.
int read_template_messages(const json& list, const std::vector<ChatMessage>& messages, nlohmann::ordered_json& out) {
    int first_tool = -1;
    out = nlohmann::ordered_json::array();
    for (size_t i = 0; i < messages.size(); ++i) {
        const json& m = list[i];
        const std::string param = "messages[" + std::to_string(i) + "]";
        nlohmann::ordered_json t = {{"role", messages[i].role}, {"content", messages[i].content}};
        if (const json* name = field(m, "name")) {
            if (!name->is_string()) throw bad_field(param + ".name", "must be a string");
            t["name"] = *name;
        }
        if (field(m, "function_call"))
            throw ApiError(400, "'" + param + ".function_call' (the deprecated function calling) is not supported; "
                                "send tool_calls instead", param + ".function_call", "unsupported_parameter");
        if (const json* calls = field(m, "tool_calls")) {
            if (!calls->is_array()) throw bad_field(param + ".tool_calls", "must be a list of tool calls");
            for (size_t k = 0; k < calls->size(); ++k) {
                const json& c = (*calls)[k];
                const std::string cp = param + ".tool_calls[" + std::to_string(k) + "]";
                if (!c.is_object() || !c.contains("function") || !c["function"].is_object() ||
                    !c["function"].contains("name") || !c["function"]["name"].is_string())
                    throw bad_field(cp, "must be {\"type\": \"function\", \"function\": {\"name\", \"arguments\"}}");
            }
            if (!calls->empty()) {
                t["tool_calls"] = nlohmann::ordered_json::parse(calls->dump());
                if (first_tool < 0) first_tool = int(i);
            }
        }
        if (const json* id = field(m, "tool_call_id")) {
            if (!id->is_string()) throw bad_field(param + ".tool_call_id", "must be a string");
            t["tool_call_id"] = *id;
        }
        if (messages[i].role == "tool" && first_tool < 0) first_tool = int(i);
        out.push_back(std::move(t));
    }
    return first_tool;
}

// ---- which fields are read, ignored or refused ----

// Read and applied by parse_request (null is "not given" for every field).
const std::set<std::string> kChatFields = {
    "model", "messages", "n", "stream", "stream_options", "max_tokens", "max_completion_tokens", "temperature",
    "top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty", "repeat_penalty", "repeat_last_n", "seed",
    "stop", "logprobs", "top_logprobs", "response_format", "tools", "tool_choice", "logit_bias"};
const std::set<std::string> kCompletionFields = {
    "model", "prompt", "n", "best_of", "echo", "stream", "stream_options", "max_tokens", "temperature", "top_p",
    "top_k", "min_p", "presence_penalty", "frequency_penalty", "repeat_penalty", "repeat_last_n", "seed", "stop",
    "logprobs", "logit_bias"};
// Harmless to ignore: they do not change the answer.
const std::set<std::string> kIgnoredFields = {"user",     "metadata",       "store",        "service_tier",
                                              "prompt_cache_key", "safety_identifier", "prediction",
                                              "parallel_tool_calls", "cache_prompt"};

ApiError unsupported(const std::string& field, const std::string& why) {
    return ApiError(400, "'" + field + "' is not supported by this server: " + why, field, "unsupported_parameter");
}

// A field that is neither read nor ignored: accepted only when its value asks for nothing.
void check_other_field(Endpoint endpoint, const std::string& k, const json& v) {
    const bool chat = endpoint == Endpoint::Chat;
    if (chat && k == "functions") {
        if (!v.is_array()) throw bad_field(k, "must be a list");
        if (!v.empty()) throw unsupported(k, "the deprecated function calling is not served; send tools instead");
        return;
    }
    if (chat && k == "function_call") {
        if (v.is_string() && (v == "none" || v == "auto")) return;
        throw unsupported(k, "the deprecated function calling is not served; send tool_choice instead");
    }
    if (chat && k == "modalities") {
        if (!v.is_array()) throw bad_field(k, "must be a list");
        for (const json& m : v)
            if (m != "text") throw unsupported(k, "this server answers with text only");
        return;
    }
    if (chat && (k == "audio" || k == "reasoning_effort" || k == "web_search_options" || k == "verbosity"))
        throw unsupported(k, "the engine has no such option");
    if (!chat && k == "suffix") {
        if (v.is_string() && v.get<std::string>().empty()) return;
        throw unsupported(k, "insertion (fill in the middle) is not served");
    }
    throw ApiError(400, "'" + k + "' is not a field of " + (chat ? "chat completions" : "completions") +
                            " that this server knows (it refuses unknown fields rather than ignore them)",
                   k, "unknown_parameter");
}

// logit_bias: {"token id": bias in [-100, 100]} (ids as decimal strings, as JSON object keys
// are). Ids are checked against the vocabulary by check_logit_bias.
std::map<int32_t, float> read_logit_bias(const json& body) {
    std::map<int32_t, float> out;
    const json* v = field(body, "logit_bias");
    if (!v) return out;
    if (!v->is_object()) throw bad_field("logit_bias", "must be an object of token ids to biases");
    for (auto it = v->begin(); it != v->end(); ++it) {
        const std::string& key = it.key();
        const bool digits = !key.empty() && key.size() <= 10 &&
                            std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
        const int64_t id = digits ? std::stoll(key) : -1;
        if (id < 0 || id > std::numeric_limits<int32_t>::max())
            throw ApiError(400, "'logit_bias' keys must be token ids (non-negative integers), got '" + key + "'",
                           "logit_bias", "invalid_value");
        if (!it->is_number())
            throw ApiError(400, "'logit_bias' values must be numbers, got " + it->dump() + " for token " + key,
                           "logit_bias", "invalid_type");
        const double bias = it->get<double>();
        if (!(bias >= -100 && bias <= 100))
            throw ApiError(400, "'logit_bias' values must be between -100 and 100, got " + it->dump() + " for token " + key,
                           "logit_bias", "invalid_value");
        out[int32_t(id)] = float(bias);
    }
    return out;
}

}  // namespace

void check_logit_bias(const CompletionRequest& r, int32_t n_vocab) {
    if (r.options.sampler.logit_bias.empty()) return;
    const int32_t last = r.options.sampler.logit_bias.rbegin()->first;
    if (last >= n_vocab)
        throw ApiError(400, "'logit_bias' names token " + std::to_string(last) + ", outside the vocabulary (" +
                                std::to_string(n_vocab) + " tokens)", "logit_bias", "invalid_value");
}

namespace {

// response_format: {"type": "text"}, {"type": "json_object"} or {"type": "json_schema",
// "json_schema": {"name", "schema", "strict", "description"}}. Null when text.
std::optional<JsonGrammar> read_response_format(const json& body) {
    const json* v = field(body, "response_format");
    if (!v) return std::nullopt;
    if (!v->is_object() || !v->contains("type") || !(*v)["type"].is_string())
        throw bad_field("response_format", "must be {\"type\": \"text\" | \"json_object\" | \"json_schema\"}");
    const std::string type = (*v)["type"].get<std::string>();
    for (auto it = v->begin(); it != v->end(); ++it)
        if (it.key() != "type" && !(it.key() == "json_schema" && type == "json_schema"))
            throw ApiError(400, "'response_format." + it.key() + "' is not a field of a " + type + " response format",
                           "response_format." + it.key(), "unknown_parameter");
    if (type == "text") return std::nullopt;
    if (type == "json_object") return JsonGrammar::any_object();
    if (type != "json_schema")
        throw ApiError(400, "'response_format.type' must be text, json_object or json_schema, got '" + type + "'",
                       "response_format", "invalid_value");
    const json* js = field(*v, "json_schema");
    if (!js || !js->is_object())
        throw ApiError(400, "'response_format.json_schema' must be an object with a 'schema'",
                       "response_format.json_schema", "missing_required_parameter");
    for (auto it = js->begin(); it != js->end(); ++it)
        if (it.key() != "name" && it.key() != "schema" && it.key() != "strict" && it.key() != "description")
            throw ApiError(400, "'response_format.json_schema." + it.key() + "' is not a field of json_schema",
                           "response_format.json_schema." + it.key(), "unknown_parameter");
    const json* schema = field(*js, "schema");
    // No schema: any JSON value is allowed (OpenAI's default); an object is what clients mean.
    if (!schema) return JsonGrammar::any_object();
    try {
        return JsonGrammar::from_schema(schema->dump());
    } catch (const JsonSchemaError& e) {
        const std::string param = "response_format.json_schema.schema";
        throw ApiError(400, "'" + param + "' cannot be enforced: " + std::string(e.what()), param,
                       e.keyword.empty() ? "invalid_value" : "unsupported_schema_keyword");
    }
}

// tools: {"type": "function", "function": {"name", "description", "parameters", "strict"}}
// each; tool_choice: "auto", "none", "required" or {"type": "function", "function": {"name"}}.
void read_tools(const json& body, CompletionRequest& r) {
    if (const json* v = field(body, "tools")) {
        if (!v->is_array()) throw bad_field("tools", "must be a list of tools");
        for (size_t i = 0; i < v->size(); ++i) {
            const json& t = (*v)[i];
            const std::string p = "tools[" + std::to_string(i) + "]";
            if (!t.is_object() || t.value("type", "") != "function" || !t.contains("function") || !t["function"].is_object())
                throw bad_field(p, "must be {\"type\": \"function\", \"function\": {\"name\", \"parameters\"}}");
            const json& f = t["function"];
            if (!f.contains("name") || !f["name"].is_string() || f["name"].get<std::string>().empty())
                throw bad_field(p + ".function.name", "must be a non-empty string");
            if (f.contains("parameters") && !f["parameters"].is_null() && !f["parameters"].is_object())
                throw bad_field(p + ".function.parameters", "must be a JSON Schema object");
        }
        r.tools = *v;
    }
    const json* c = field(body, "tool_choice");
    if (!c) {
        r.tool_choice = r.tools.empty() ? CompletionRequest::ToolChoice::None : CompletionRequest::ToolChoice::Auto;
        return;
    }
    if (c->is_string()) {
        const std::string s = c->get<std::string>();
        if (s == "none") r.tool_choice = CompletionRequest::ToolChoice::None;
        else if (s == "auto") r.tool_choice = CompletionRequest::ToolChoice::Auto;
        else if (s == "required") r.tool_choice = CompletionRequest::ToolChoice::Required;
        else throw ApiError(400, "'tool_choice' must be none, auto, required or a named function, got '" + s + "'",
                            "tool_choice", "invalid_value");
    } else if (c->is_object() && c->value("type", "") == "function" && c->contains("function") &&
               (*c)["function"].is_object() && (*c)["function"].contains("name") && (*c)["function"]["name"].is_string()) {
        r.tool_choice = CompletionRequest::ToolChoice::Named;
        r.tool_name = (*c)["function"]["name"].get<std::string>();
        bool found = false;
        for (const json& t : r.tools) found = found || t["function"]["name"] == r.tool_name;
        if (!found)
            throw ApiError(400, "'tool_choice' names the function '" + r.tool_name + "', which 'tools' does not hold",
                           "tool_choice", "invalid_value");
    } else {
        throw bad_field("tool_choice", "must be none, auto, required or {\"type\": \"function\", \"function\": {\"name\"}}");
    }
    if (r.tools.empty() && r.tool_choice != CompletionRequest::ToolChoice::None &&
        r.tool_choice != CompletionRequest::ToolChoice::Auto)
        throw ApiError(400, "'tool_choice' asks for a call, and 'tools' is empty", "tool_choice", "invalid_value");
    if (r.tools.empty()) r.tool_choice = CompletionRequest::ToolChoice::None;
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

json parse_body(const std::string& body_text) {
    json body;
    try {
        body = json::parse(body_text);
    } catch (const json::exception& e) {
        // A syntax error, invalid UTF-8, or a number past double's range (1e400): the message
        // may quote the bad bytes, which the error body's writer replaces (app::json_text).
        throw ApiError(400, std::string("the body is not valid JSON: ") + e.what(), "", "invalid_json");
    }
    if (!body.is_object()) throw ApiError(400, "the body must be a JSON object", "", "invalid_json");
    return body;
}

json error_body(const ApiError& e) {
    return {{"error",
             {{"message", e.what()},
              {"type", e.type},
              {"param", e.param.empty() ? json() : json(e.param)},
              {"code", e.code.empty() ? json() : json(e.code)}}}};
}

CompletionRequest parse_request(Endpoint endpoint, const std::string& body_text, uint64_t seed) {
    const json body = parse_body(body_text);
    const std::set<std::string>& known = endpoint == Endpoint::Chat ? kChatFields : kCompletionFields;
    for (auto it = body.begin(); it != body.end(); ++it)
        if (!known.count(it.key()) && !kIgnoredFields.count(it.key()) && !it.value().is_null())
            check_other_field(endpoint, it.key(), it.value());

    CompletionRequest r;
    r.endpoint = endpoint;
    if (const json* m = field(body, "model")) {
        if (!m->is_string()) throw bad_field("model", "must be a string");
        r.model = m->get<std::string>();
    }
    if (endpoint == Endpoint::Chat) {
        r.messages = read_messages(body);
        r.tool_message = read_template_messages(body["messages"], r.messages, r.messages_json);
        r.json = read_response_format(body);
        read_tools(body, r);
        if (r.tool_choice != CompletionRequest::ToolChoice::None && r.json)
            throw unsupported("response_format", "a JSON response format is not combined with tools");
    } else {
        read_prompt(body, r);
    }

    r.n = int(read_integer(body, "n", 1, 1, kMaxChoices));
    r.stream = read_bool(body, "stream", false);
    if (const json* so = field(body, "stream_options")) {
        if (!so->is_object()) throw bad_field("stream_options", "must be an object");
        r.include_usage = read_bool(*so, "include_usage", false);
    }
    if (endpoint == Endpoint::Chat) {
        r.logprobs = read_bool(body, "logprobs", false);
        r.top_logprobs = int(read_integer(body, "top_logprobs", 0, 0, 20));
        if (field(body, "top_logprobs") && !r.logprobs)
            throw ApiError(400, "'top_logprobs' needs 'logprobs': true", "top_logprobs", "invalid_value");
        if (r.logprobs && r.tool_choice != CompletionRequest::ToolChoice::None)
            throw unsupported("logprobs", "log-probabilities are not served with tools (calls are read out of the text)");
    } else {
        // best_of > n asks for candidates ranked by likelihood, of which n are returned.
        if (read_integer(body, "best_of", r.n, 1, kMaxChoices) != r.n)
            throw ApiError(400, "'best_of' must equal 'n' (this server returns every choice it generates)", "best_of",
                           "unsupported_parameter");
        r.logprobs = field(body, "logprobs") != nullptr;
        r.top_logprobs = int(read_integer(body, "logprobs", 0, 0, 20));
        r.echo = read_bool(body, "echo", false);
        if (r.echo && r.logprobs)
            throw unsupported("echo", "with 'logprobs' it asks for the prompt's log-probabilities, which are not served");
    }
    r.options.top_n = r.top_logprobs;

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
    s.repeat_last_n = int(read_integer(body, "repeat_last_n", s.repeat_last_n, -1, max_int));
    s.seed = uint64_t(read_integer(body, "seed", int64_t(seed & uint64_t(std::numeric_limits<int64_t>::max())),
                                   std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()));
    o.stop = read_stop(body);
    s.logit_bias = read_logit_bias(body);
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

namespace {

json tool_calls_json(const std::vector<ToolCall>& calls, bool indexed) {
    json out = json::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        json c = {{"id", calls[i].id},
                  {"type", "function"},
                  {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
        if (indexed) c["index"] = i;
        out.push_back(std::move(c));
    }
    return out;
}

}  // namespace

json completion_json(const ResponseHeader& h, const std::string& text, const char* finish, int prompt_tokens,
                     int completion_tokens, const json& logprobs, const std::vector<ToolCall>& tool_calls) {
    json choice = {{"index", h.choice}, {"logprobs", logprobs}, {"finish_reason", finish}};
    if (h.endpoint == Endpoint::Chat) {
        choice["message"] = {{"role", "assistant"}, {"content", text}};
        if (!tool_calls.empty()) {
            choice["message"]["tool_calls"] = tool_calls_json(tool_calls, false);
            if (text.empty()) choice["message"]["content"] = nullptr;
        }
    } else
        choice["text"] = text;
    json out = header_json(h, false);
    out["choices"] = json::array({choice});
    out["usage"] = usage_json(prompt_tokens, completion_tokens);
    return out;
}

json tool_calls_chunk_json(const ResponseHeader& h, const std::vector<ToolCall>& calls) {
    json choice = {{"index", h.choice}, {"logprobs", nullptr}, {"finish_reason", nullptr},
                   {"delta", {{"tool_calls", tool_calls_json(calls, true)}}}};
    json out = header_json(h, true);
    out["choices"] = json::array({choice});
    return out;
}

json chunk_json(const ResponseHeader& h, const std::string& text, const char* finish, bool role_only,
                const json& logprobs) {
    json choice = {{"index", h.choice}, {"logprobs", logprobs}, {"finish_reason", finish ? json(finish) : json()}};
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

namespace {

json bytes_json(const std::string& s) {
    json out = json::array();
    for (unsigned char c : s) out.push_back(int(c));
    return out;
}

}  // namespace

json logprobs_json(Endpoint endpoint, const std::vector<TokenLogprobs>& tokens, int top_n, size_t offset) {
    if (endpoint == Endpoint::Chat) {
        json content = json::array();
        for (const TokenLogprobs& t : tokens) {
            json top = json::array();
            for (size_t i = 0; i < t.top.size() && int(i) < top_n; ++i)
                top.push_back({{"token", t.top[i].piece}, {"logprob", t.top[i].logprob}, {"bytes", bytes_json(t.top[i].piece)}});
            content.push_back({{"token", t.piece}, {"logprob", t.logprob}, {"bytes", bytes_json(t.piece)}, {"top_logprobs", top}});
        }
        return {{"content", content}, {"refusal", nullptr}};
    }
    json toks = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
    for (const TokenLogprobs& t : tokens) {
        toks.push_back(t.piece);
        lps.push_back(t.logprob);
        json top = json::object();
        for (size_t i = 0; i < t.top.size() && int(i) < top_n; ++i) top[t.top[i].piece] = t.top[i].logprob;
        tops.push_back(top);
        offsets.push_back(offset);
        offset += t.piece.size();
    }
    return {{"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

EmbeddingRequest parse_embedding_request(const std::string& body_text) {
    const json body = parse_body(body_text);
    static const std::set<std::string> known = {"model", "input", "encoding_format", "dimensions", "user"};
    for (auto it = body.begin(); it != body.end(); ++it)
        if (!known.count(it.key()) && !it.value().is_null())
            throw ApiError(400, "'" + it.key() + "' is not a field of embeddings that this server knows", it.key(),
                           "unknown_parameter");
    EmbeddingRequest r;
    if (const json* m = field(body, "model")) {
        if (!m->is_string()) throw bad_field("model", "must be a string");
        r.model = m->get<std::string>();
    }
    if (const json* f = field(body, "encoding_format")) {
        if (*f != "float" && *f != "base64")
            throw ApiError(400, "'encoding_format' must be float or base64", "encoding_format", "invalid_value");
        r.base64 = *f == "base64";
    }
    r.dimensions = int(read_integer(body, "dimensions", 0, 1, std::numeric_limits<int32_t>::max()));
    const json* v = field(body, "input");
    if (!v) throw ApiError(400, "'input' is required", "input", "missing_required_parameter");
    auto token_list = [](const json& list) {
        std::vector<int32_t> ids;
        for (const json& t : list) {
            if (!t.is_number_integer()) throw bad_field("input", "must be a string, a list of strings or of token ids");
            const bool fits = t.is_number_unsigned() ? t.get<uint64_t>() <= uint64_t(std::numeric_limits<int32_t>::max())
                                                     : t.get<int64_t>() >= 0 &&
                                                           t.get<int64_t>() <= std::numeric_limits<int32_t>::max();
            if (!fits) throw ApiError(400, "token id " + t.dump() + " is outside the vocabulary", "input", "invalid_value");
            ids.push_back(int32_t(t.get<int64_t>()));
        }
        return ids;
    };
    if (v->is_string()) {
        r.texts.push_back(v->get<std::string>());
    } else if (v->is_array() && !v->empty() && (*v)[0].is_number_integer()) {
        r.token_inputs.push_back(token_list(*v));
    } else if (v->is_array() && !v->empty() && (*v)[0].is_array()) {
        for (const json& list : *v) {
            if (!list.is_array() || list.empty()) throw bad_field("input", "must be lists of token ids");
            r.token_inputs.push_back(token_list(list));
        }
    } else if (v->is_array() && !v->empty()) {
        for (const json& t : *v) {
            if (!t.is_string()) throw bad_field("input", "must be a string, a list of strings or of token ids");
            r.texts.push_back(t.get<std::string>());
        }
    } else {
        throw bad_field("input", "must be a non-empty string, list of strings or of token ids");
    }
    if (r.texts.size() + r.token_inputs.size() > 2048)
        throw ApiError(400, "'input' holds more than 2048 inputs", "input", "invalid_value");
    return r;
}

std::string base64_floats(const std::vector<float>& values) {
    static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string bytes(values.size() * sizeof(float), '\0');
    std::memcpy(bytes.data(), values.data(), bytes.size());  // little-endian hosts (x86, ARM)
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    for (size_t i = 0; i < bytes.size(); i += 3) {
        const uint32_t b0 = uint8_t(bytes[i]), b1 = i + 1 < bytes.size() ? uint8_t(bytes[i + 1]) : 0,
                       b2 = i + 2 < bytes.size() ? uint8_t(bytes[i + 2]) : 0;
        const uint32_t n = (b0 << 16) | (b1 << 8) | b2;
        out += kAlphabet[(n >> 18) & 63];
        out += kAlphabet[(n >> 12) & 63];
        out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
        out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
    }
    return out;
}

json embeddings_json(const std::string& model, const std::vector<std::vector<float>>& rows, bool base64,
                     int prompt_tokens) {
    json data = json::array();
    for (size_t i = 0; i < rows.size(); ++i)
        data.push_back({{"object", "embedding"}, {"index", i},
                        {"embedding", base64 ? json(base64_floats(rows[i])) : json(rows[i])}});
    return {{"object", "list"}, {"data", data}, {"model", model},
            {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
}

}  // namespace vkllm::cli::server
