// Tool calls: the format each kind of chat template writes calls in (the golden templates),
// reading calls out of answers in the Hermes, Llama 3.x and Mistral formats, whole and byte by
// byte as they stream (content released at once, a call held until the end), and the grammar
// that forces a call.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "sampling/json_matcher.h"
#include "sampling/json_output_impl.h"
#include "test_support.h"
#include "vkllm/tool_calls.h"

using namespace vkllm;

namespace {

std::string golden_template(const std::string& name) {
    const auto path = std::filesystem::path(vkllm::test::source_dir()) / "tests" / "golden" / "templates" / (name + ".jinja");
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    EXPECT_FALSE(s.str().empty()) << path;
    return s.str();
}

// Reads `text` as it would stream: one byte at a time. `released` gets the content released
// before the end.
ToolCallReader::Result read(ToolFormat format, const std::string& text, std::string* released = nullptr) {
    ToolCallReader reader(format);
    std::string early;
    for (char c : text) early += reader.push(std::string(1, c));
    ToolCallReader::Result r = reader.finish();
    if (released) *released = early;
    r.content = early + r.content;
    return r;
}

}  // namespace

TEST(ToolCalls, FormatOfEachTemplateKind) {
    EXPECT_EQ(tool_format(golden_template("Qwen-Qwen2.5-7B-Instruct")), ToolFormat::Hermes);
    EXPECT_EQ(tool_format(golden_template("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use")), ToolFormat::Hermes);
    EXPECT_EQ(tool_format(golden_template("meta-llama-Llama-3.1-8B-Instruct")), ToolFormat::Llama3);
    EXPECT_EQ(tool_format(golden_template("meta-llama-Llama-3.3-70B-Instruct")), ToolFormat::Llama3);
    EXPECT_EQ(tool_format(golden_template("mistralai-Mistral-Nemo-Instruct-2407")), ToolFormat::Mistral);
    EXPECT_EQ(tool_format(golden_template("google-gemma-2-2b-it")), ToolFormat::None);
}

TEST(ToolCalls, Hermes) {
    std::string released;
    const auto r = read(ToolFormat::Hermes,
                        "Let me look. <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris <b>\"}}\n"
                        "</tool_call>\n<tool_call>{\"name\":\"add\",\"arguments\":{\"a\":1}}</tool_call>",
                        &released);
    EXPECT_EQ(released, "Let me look. ");  // released before the call began, nothing after
    ASSERT_EQ(r.calls.size(), 2u);
    EXPECT_EQ(r.calls[0].name, "get_weather");
    EXPECT_EQ(r.calls[0].arguments, R"({"city":"Paris <b>"})");
    EXPECT_EQ(r.calls[1].name, "add");
    EXPECT_EQ(r.calls[1].arguments, R"({"a":1})");
    EXPECT_NE(r.calls[0].id, r.calls[1].id);
    EXPECT_EQ(r.calls[0].id.size(), 5u + 24u);
    EXPECT_EQ(r.calls[0].id.rfind("call_", 0), 0u);
    EXPECT_EQ(r.content, "Let me look. \n");
    // Text that only looks like the start of a tag is held, then released.
    const auto plain = read(ToolFormat::Hermes, "a <tool but not a call <tool_cal");
    EXPECT_TRUE(plain.calls.empty());
    EXPECT_EQ(plain.content, "a <tool but not a call <tool_cal");
    // A tag around what is not a call stays text.
    const auto broken = read(ToolFormat::Hermes, "x <tool_call>{\"name\": 3}</tool_call>");
    EXPECT_TRUE(broken.calls.empty());
    EXPECT_EQ(broken.content, "x <tool_call>{\"name\": 3}</tool_call>");
}

TEST(ToolCalls, Llama3) {
    const auto r = read(ToolFormat::Llama3, " {\"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": \"}\"}}");
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].name, "add");
    EXPECT_EQ(r.calls[0].arguments, R"({"a":1,"b":"}"})");
    EXPECT_EQ(r.content, "");
    std::string released;
    const auto text = read(ToolFormat::Llama3, "Hello {\"name\": \"add\"}", &released);
    EXPECT_TRUE(text.calls.empty());
    EXPECT_EQ(released, "Hello {\"name\": \"add\"}");  // not a call: released as it came
    const auto unfinished = read(ToolFormat::Llama3, "{\"name\": \"add\", \"parameters\": {");
    EXPECT_TRUE(unfinished.calls.empty());
    EXPECT_EQ(unfinished.content, "{\"name\": \"add\", \"parameters\": {");
}

TEST(ToolCalls, Mistral) {
    const auto list = read(ToolFormat::Mistral,
                           "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"x\": [1, 2]}}, {\"name\": \"b\", \"arguments\": {}}]");
    ASSERT_EQ(list.calls.size(), 2u);
    EXPECT_EQ(list.calls[0].name, "a");
    EXPECT_EQ(list.calls[0].arguments, R"({"x":[1,2]})");
    EXPECT_EQ(list.calls[1].name, "b");
    EXPECT_EQ(list.calls[0].id.size(), 9u);  // Mistral's templates take 9 letters or digits only
    const auto args = read(ToolFormat::Mistral, "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Oslo\"}");
    ASSERT_EQ(args.calls.size(), 1u);
    EXPECT_EQ(args.calls[0].name, "get_weather");
    EXPECT_EQ(args.calls[0].arguments, R"({"city":"Oslo"})");
    const auto none = read(ToolFormat::Mistral, "[TOOL_CALLS] nothing");
    EXPECT_TRUE(none.calls.empty());
    EXPECT_EQ(none.content, "[TOOL_CALLS] nothing");
}

TEST(ToolCalls, ForcedCallGrammar) {
    const std::string tools = R"([{"type": "function", "function": {"name": "add", "parameters": {"type": "object",
        "properties": {"a": {"type": "integer"}}, "required": ["a"], "additionalProperties": false}}},
        {"type": "function", "function": {"name": "now"}}])";
    const auto accepts = [](const ForcedCall& f, const std::string& text) {
        sampling::JsonMatcher m(f.grammar.impl().nodes);
        return m.feed(text) && m.complete();
    };
    const ForcedCall hermes = forced_call(ToolFormat::Hermes, tools, "");
    EXPECT_EQ(hermes.prefix, "<tool_call>\n");
    EXPECT_TRUE(accepts(hermes, R"({"name": "add", "arguments": {"a": 2}})"));
    EXPECT_TRUE(accepts(hermes, R"({"arguments": {}, "name": "now"})"));
    EXPECT_FALSE(accepts(hermes, R"({"name": "sub", "arguments": {}})"));
    EXPECT_FALSE(accepts(hermes, R"({"name": "add", "arguments": {"a": "2"}})"));
    const ForcedCall named = forced_call(ToolFormat::Llama3, tools, "now");
    EXPECT_EQ(named.prefix, "");
    EXPECT_TRUE(accepts(named, R"({"name": "now", "parameters": {"x": 1}})"));
    EXPECT_FALSE(accepts(named, R"({"name": "add", "parameters": {"a": 1}})"));
    const ForcedCall mistral = forced_call(ToolFormat::Mistral, tools, "add");
    EXPECT_EQ(mistral.prefix, "[TOOL_CALLS]");
    EXPECT_TRUE(accepts(mistral, R"([{"name": "add", "arguments": {"a": 1}}])"));
    EXPECT_FALSE(accepts(mistral, R"([{"name": "add", "arguments": {"a": 1}}, )"));
    // What a forced call writes, the reader reads back.
    ToolCallReader reader(ToolFormat::Hermes, hermes.prefix);
    EXPECT_EQ(reader.push(R"({"name": "add", "arguments": {"a": 2}})"), "");
    const auto r = reader.finish();
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].arguments, R"({"a":2})");
    EXPECT_THROW(forced_call(ToolFormat::Hermes, tools, "missing"), std::invalid_argument);
    EXPECT_THROW(forced_call(ToolFormat::Hermes,
                             R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "string", "pattern": "x"}}}])", ""),
                 JsonSchemaError);
}
