// The public chat-template API (vkllm/chat_template.h) over the Jinja interpreter.
#include "vkllm/chat_template.h"

#include <cstdlib>
#include <cstring>
#include <ctime>

#include <nlohmann/json.hpp>

#include "template/interpreter.h"
#include "template/parser.h"

namespace vkllm {

namespace {

std::string with_position(const std::string& message, int line, int column) {
    if (line <= 0) return message;
    return "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + message;
}

jinja::Value parse_json(const std::string& text, const char* field) {
    try {
        return jinja::from_json(nlohmann::ordered_json::parse(text));
    } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument(std::string(field) + " is not valid JSON: " + e.what());
    } catch (const jinja::Error& e) {  // valid JSON that a template value cannot hold
        throw std::invalid_argument(std::string(field) + ": " + e.what());
    }
}

// "YYYY-MM-DD" or "YYYY-MM-DD HH:MM:SS" (also with 'T'); empty: VKLLM_TEMPLATE_NOW or the clock.
std::tm resolve_now(std::string text) {
    if (text.empty())
        if (const char* env = std::getenv("VKLLM_TEMPLATE_NOW")) text = env;
    std::tm tm{};
    if (text.empty()) {
        std::time_t t = std::time(nullptr);
        localtime_r(&t, &tm);
        return tm;
    }
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
    int n = std::sscanf(text.c_str(), "%d-%d-%d%*[ T]%d:%d:%d", &y, &mo, &d, &h, &mi, &s);
    if (n != 3 && n != 6) throw std::invalid_argument("bad date '" + text + "': expected YYYY-MM-DD [HH:MM:SS]");
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = s;
    std::time_t t = timegm(&tm);  // fills in the weekday and the day of the year
    gmtime_r(&t, &tm);
    return tm;
}

}  // namespace

TemplateError::TemplateError(const std::string& message, int line, int column, bool raised, bool cancelled)
    : std::runtime_error(raised || cancelled ? message : with_position(message, line, column)),
      message_(message), line_(line), column_(column), raised_(raised), cancelled_(cancelled) {}

std::string render_chat_template(const std::string& source, const ChatTemplateInputs& inputs) {
    jinja::Dict vars;
    jinja::Value messages = parse_json(inputs.messages_json, "messages");
    if (!messages.is_list()) throw std::invalid_argument("messages must be a JSON list");
    vars.set("messages", messages);
    vars.set("tools", inputs.tools_json.empty() ? jinja::Value::none() : parse_json(inputs.tools_json, "tools"));
    vars.set("documents", jinja::Value::none());
    vars.set("add_generation_prompt", jinja::Value::from(inputs.add_generation_prompt));
    vars.set("bos_token", jinja::Value::from(inputs.bos_token));
    vars.set("eos_token", jinja::Value::from(inputs.eos_token));
    if (!inputs.extra_json.empty()) {
        jinja::Value extra = parse_json(inputs.extra_json, "extra");
        if (!extra.is_dict()) throw std::invalid_argument("extra must be a JSON object");
        for (const auto& [k, v] : extra.dict->items) vars.set(k, v);
    }
    std::tm now = resolve_now(inputs.now);
    try {
        jinja::Source src(source);
        jinja::Template tpl = jinja::parse(src);
        return jinja::render(tpl, src, vars, now, inputs.cancelled);
    } catch (const jinja::Error& e) {
        throw TemplateError(e.what(), e.line, e.column, e.raised, e.cancelled);
    }
}

std::string render_chat_template(const std::string& source, const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt, const std::string& bos_token,
                                 const std::string& eos_token, const std::function<bool()>& cancelled) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
    ChatTemplateInputs inputs;
    // A model's reply can hold bytes that are not UTF-8 (a token cut inside a character, or
    // byte tokens of a random model); they are written as U+FFFD instead of failing the turn.
    inputs.messages_json = list.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    inputs.add_generation_prompt = add_generation_prompt;
    inputs.bos_token = bos_token;
    inputs.eos_token = eos_token;
    inputs.cancelled = cancelled;
    return render_chat_template(source, inputs);
}

}  // namespace vkllm
