// vkllm template: renders a template file or a model's chat template to stdout, exactly as the
// golden renderings (tests/golden/templates) have it; a raising template exits 1 with its message.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "gguf/gguf.h"
#include "test_support.h"

namespace vkllm {
namespace {

using json = nlohmann::ordered_json;

using Result = test::ShellResult;

// Runs `vkllm template ARGS`; stderr goes to `stderr_to` (a shell redirection target).
Result run(const std::string& args, const std::string& stderr_to = "/dev/null") {
    return test::shell(test::vkllm_bin() + " template " + args + " 2>" + stderr_to);
}

std::string read_text(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::string write_file(const std::string& name, const std::string& bytes) { return test::write_temp_file(name, bytes); }

std::string golden_dir() { return test::source_dir() + "/tests/golden/templates"; }

json conversation(const std::string& name) {
    for (const auto& c : json::parse(read_text(golden_dir() + "/conversations.json")))
        if (c["name"] == name) return c;
    throw std::runtime_error("no conversation " + name);
}

std::string golden_output(const std::string& stem, const std::string& conv, bool generation_prompt) {
    json g = json::parse(read_text(golden_dir() + "/expected/" + stem + ".json"));
    for (const auto& r : g["renders"])
        if (r["conversation"] == conv && r["add_generation_prompt"] == generation_prompt) return r["output"];
    throw std::runtime_error("no golden rendering for " + stem + " / " + conv);
}

TEST(TemplateCli, TemplateFileRendersExactlyTheGolden) {
    json c = conversation("tool_calls");
    std::string messages = write_file("messages.json", c["messages"].dump());
    std::string tools = write_file("tools.json", c["tools"].dump());
    for (const char* stem : {"Qwen-Qwen3-0.6B", "meta-llama-Llama-3.1-8B-Instruct", "openai-gpt-oss-120b"}) {
        std::string tpl = golden_dir() + "/" + stem + ".jinja";
        Result r = run("--template " + tpl + " --messages " + messages + " --tools " + tools +
                       " --add-generation-prompt --bos '<s>' --eos '</s>' --now 2026-01-15");
        EXPECT_EQ(r.code, 0) << stem;
        EXPECT_EQ(r.out, golden_output(stem, "tool_calls", true)) << stem;
    }
    json k = conversation("no_thinking_kwarg");
    std::string extra = write_file("extra.json", k["extra"].dump());
    messages = write_file("messages2.json", k["messages"].dump());
    Result r = run("--template " + golden_dir() + "/Qwen-Qwen3-0.6B.jinja --messages " + messages + " --extra " + extra);
    EXPECT_EQ(r.code, 0);
    EXPECT_EQ(r.out, golden_output("Qwen-Qwen3-0.6B", "no_thinking_kwarg", false));
}

TEST(TemplateCli, ModelTemplatesAndTheirSpecialTokens) {
    gguf::Writer w;
    w.set("general.architecture", gguf::Value::from_string("llama"));
    w.set("tokenizer.ggml.tokens", gguf::Value::from_strings({"<unk>", "<BOS>", "<EOS>"}));
    w.set("tokenizer.ggml.bos_token_id", gguf::Value::from_u32(1));
    w.set("tokenizer.ggml.eos_token_id", gguf::Value::from_u32(2));
    w.set("tokenizer.chat_template",
          gguf::Value::from_string("{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}\n"
                                   "{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}"));
    w.set("tokenizer.chat_template.tool_use", gguf::Value::from_string("tools: {{ tools | length }}"));
    std::string model = test::temp_path("chat.gguf");
    w.write(model);
    std::string messages = write_file("m.json", R"([{"role": "user", "content": "hi"}])");

    Result r = run("-m " + model + " --messages " + messages + " --add-generation-prompt");
    EXPECT_EQ(r.code, 0);
    EXPECT_EQ(r.out, "<BOS>[user] hi<EOS>\n[assistant]");
    r = run("-m " + model + " --messages " + messages + " --bos B --eos E");
    EXPECT_EQ(r.out, "B[user] hiE\n");
    std::string tools = write_file("t.json", R"([{"type": "function"}, {"type": "function"}])");
    r = run("-m " + model + " --name tool_use --messages " + messages + " --tools " + tools);
    EXPECT_EQ(r.code, 0);
    EXPECT_EQ(r.out, "tools: 2");
    std::string err = test::temp_path("err.txt");
    r = run("-m " + model + " --name rag --messages " + messages, err);
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(read_text(err).find("no string tokenizer.chat_template.rag"), std::string::npos) << read_text(err);
}

TEST(TemplateCli, RaisingTemplatesAndBadInputFail) {
    std::string err = test::temp_path("err.txt");
    std::string system_user = write_file("su.json", conversation("system_user")["messages"].dump());
    Result r = run("--template " + golden_dir() + "/google-gemma-2-2b-it.jinja --messages " + system_user, err);
    EXPECT_EQ(r.code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_NE(read_text(err).find("System role not supported"), std::string::npos) << read_text(err);

    std::string broken = write_file("broken.jinja", "line one\n{% for m in messages %}{{ m.content }");
    r = run("--template " + broken + " --messages " + system_user, err);
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(read_text(err).find("line 2, column "), std::string::npos) << read_text(err);

    std::string bad_json = write_file("bad.json", "[{\"role\": ");
    r = run("--template " + broken + " --messages " + bad_json, err);
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(read_text(err).find("messages is not valid JSON"), std::string::npos) << read_text(err);

    EXPECT_EQ(run("--messages " + system_user).code, 2);                    // no template
    EXPECT_EQ(run("--template " + broken).code, 2);                         // no messages
    EXPECT_EQ(run("--template x.jinja -m y.gguf --messages m.json").code, 2);  // both
    EXPECT_EQ(run("--template /nonexistent.jinja --messages " + system_user).code, 1);

    // Endless inputs are refused by what they are, before a byte is read.
    r = run("--template /dev/zero --messages " + system_user, err);
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(read_text(err).find("/dev/zero: it is a character device"), std::string::npos) << read_text(err);
    r = run("--template " + broken + " --messages /dev/urandom", err);
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(read_text(err).find("messages file /dev/urandom"), std::string::npos) << read_text(err);
}

}  // namespace
}  // namespace vkllm
