// Chat templates: renders a model's `tokenizer.chat_template` (a Jinja template) with a
// conversation, as Hugging Face's transformers renders it (Python jinja2 with trim_blocks and
// lstrip_blocks, the loopcontrols extension, `{% generation %}`, raise_exception,
// strftime_now and its tojson). The engine carries its own interpreter of the Jinja subset
// these templates use; a template it cannot render gives a TemplateError with line and column.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace vkllm {

// Why a template could not be rendered. `raised()` is true when the template itself called
// raise_exception(message) (then what() is exactly that message); `cancelled()` is true when
// the caller's `cancelled` callback stopped the rendering (what() is "rendering was
// cancelled"); otherwise what() reads "line L, column C: ..." and line()/column() say where
// (1-based; 0 when unknown). A template that needs more than the render limits allow (time,
// memory) fails with a message naming the limit.
class TemplateError : public std::runtime_error {
public:
    TemplateError(const std::string& message, int line, int column, bool raised = false, bool cancelled = false);
    int line() const { return line_; }
    int column() const { return column_; }
    bool raised() const { return raised_; }
    bool cancelled() const { return cancelled_; }
    const std::string& message() const { return message_; }  // without the position

private:
    std::string message_;
    int line_, column_;
    bool raised_, cancelled_;
};

// What a chat template is rendered with. JSON texts are parsed as JSON (a parse error is a
// std::invalid_argument naming the field).
struct ChatTemplateInputs {
    std::string messages_json = "[]";  // a JSON list of {"role": ..., "content": ..., ...}
    std::string tools_json;            // a JSON list of tools; empty: `tools` is none
    bool add_generation_prompt = false;
    std::string bos_token, eos_token;
    std::string extra_json;            // a JSON object of extra variables (enable_thinking, ...)
    // The date strftime_now() formats: "YYYY-MM-DD" or "YYYY-MM-DD HH:MM:SS" (local time);
    // empty: the clock now, or the environment variable VKLLM_TEMPLATE_NOW when it is set.
    std::string now;
    // Polled while rendering (about every millisecond of work, whatever the template does):
    // when it returns true, rendering stops with a TemplateError whose cancelled() is true.
    // Called on the rendering thread; empty: rendering is not cancelled.
    std::function<bool()> cancelled;
};

// Renders `source` (the template's text). Throws TemplateError where the template cannot be
// parsed, raises while rendering, crosses a render limit or is cancelled.
std::string render_chat_template(const std::string& source, const ChatTemplateInputs& inputs);

// One message of a plain text conversation.
struct ChatMessage {
    std::string role;     // "system", "user", "assistant", ...
    std::string content;
};

// A plain conversation (the chat front-ends): messages are turned into the JSON list above
// (bytes of a message that are not UTF-8 become U+FFFD); `cancelled` as in ChatTemplateInputs.
std::string render_chat_template(const std::string& source, const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt, const std::string& bos_token = "",
                                 const std::string& eos_token = "",
                                 const std::function<bool()>& cancelled = {});

}  // namespace vkllm
