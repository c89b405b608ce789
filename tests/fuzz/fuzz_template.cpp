// libFuzzer target: the chat-template renderer (vkllm/chat_template.h) on arbitrary template
// sources and conversations.
//
// Input layout: the template source, then optionally a NUL byte and the messages as JSON.
// Without the NUL, a fixed conversation (system, user, assistant with a tool call, user) is
// used, so that mutations of real templates reach their rendering code.
//
// Checked: rendering either returns text or throws TemplateError (template problems, limits)
// or std::invalid_argument (bad JSON); any other exception, a crash, a sanitizer report, a
// hang (-timeout) or a blown memory limit (-rss_limit_mb, -malloc_limit_mb) stops the run.
// The render limits (engine/template/limits.h) keep every input finite.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "vkllm/chat_template.h"

namespace {

const char* kConversation = R"([
 {"role": "system", "content": "You are helpful."},
 {"role": "user", "content": "Hi <b>there</b>\n"},
 {"role": "assistant", "content": "", "tool_calls": [{"type": "function",
   "function": {"name": "get_time", "arguments": {"zone": "UTC"}}}]},
 {"role": "tool", "content": "12:00"},
 {"role": "user", "content": "Thanks!"}])";

const char* kTools = R"([{"type": "function", "function": {"name": "get_time", "description": "now",
  "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}}}}])";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string input(reinterpret_cast<const char*>(data), size);
    const size_t nul = input.find('\0');
    vkllm::ChatTemplateInputs inputs;
    inputs.messages_json = nul == std::string::npos ? kConversation : input.substr(nul + 1);
    inputs.tools_json = kTools;
    inputs.add_generation_prompt = size % 2 == 0;
    inputs.bos_token = "<s>";
    inputs.eos_token = "</s>";
    inputs.extra_json = R"({"enable_thinking": false})";
    inputs.now = "2024-05-06 07:08:09";
    try {
        vkllm::render_chat_template(input.substr(0, nul), inputs);
    } catch (const vkllm::TemplateError&) {
    } catch (const std::invalid_argument&) {
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fuzz_template: unexpected exception: %s\n", e.what());
        std::abort();
    }
    return 0;
}
