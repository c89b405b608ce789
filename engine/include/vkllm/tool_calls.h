// Tool calls (OpenAI's tools / tool_choice): which format a chat template's model writes calls
// in, the grammar that forces a call (tool_choice "required" or a named function), and reading
// the calls back out of the answer, whole or while it streams.
//
// Formats (found in the template's source):
//  - Hermes / Qwen: <tool_call>{"name": ..., "arguments": {...}}</tool_call>, any number,
//    text around them is content;
//  - Llama 3.x: the whole answer one JSON object {"name": ..., "parameters": {...}} (or
//    "arguments"), optionally after <|python_tag|>;
//  - Mistral: [TOOL_CALLS] then a JSON list of {"name", "arguments"} (or, as newer templates
//    write it, NAME[ARGS]{...}).
#pragma once

#include <string>
#include <vector>

#include "vkllm/json_output.h"

namespace vkllm {

enum class ToolFormat { None, Hermes, Llama3, Mistral };

// The format a template's source renders tool calls in; None when it has no place for tools.
ToolFormat tool_format(const std::string& template_source);
const char* to_string(ToolFormat f);

struct ToolCall {
    std::string id;         // "call_..." (unique within the server)
    std::string name;
    std::string arguments;  // JSON text of the arguments object
};

// A forced call: the text put at the start of the answer (added to the prompt, so the model
// continues after it) and the grammar of what follows. `tools_json` is the request's list as
// JSON text ({"type": "function", "function": {"name", "parameters"}} each, as checked by the
// caller), `name` the function tool_choice names (empty: any of them). Throws JsonSchemaError
// for a function's parameters the grammar cannot enforce.
struct ForcedCall {
    std::string prefix;
    JsonGrammar grammar;
};
ForcedCall forced_call(ToolFormat format, const std::string& tools_json, const std::string& name);

// Reads an answer while it streams: text that cannot be part of a tool call is released as
// content at once; text from where a call may begin is held until the end, then parsed.
class ToolCallReader {
public:
    // `prefix`: text already at the start of the answer (a forced call's), never content.
    ToolCallReader(ToolFormat format, std::string prefix = "");
    // Appends generated text; returns the content that can be released now.
    std::string push(const std::string& text);
    // At the end: the calls found, and what of the held text is content after all.
    struct Result {
        std::string content;
        std::vector<ToolCall> calls;
    };
    Result finish();

private:
    size_t hold_from() const;  // the index in text_ from which it may be part of a call

    ToolFormat format_;
    std::string text_;      // everything generated (after the prefix)
    std::string prefix_;
    size_t released_ = 0;   // bytes of text_ released as content
};

}  // namespace vkllm
