// Every chat template of tests/golden/templates/ (from llama.cpp's models/templates/) rendered
// with every conversation of conversations.json, generation prompt off and on, against the
// renderings Python jinja2 made (scripts/make-golden-templates.py): byte for byte, and where
// jinja2 failed, vkllm must fail with the same message (raise_exception's, or jinja2's own).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "vkllm/chat_template.h"

namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

// Templates vkllm does not render as jinja2 does, with the reason. Empty: every one matches.
const std::map<std::string, std::string> kKnownDifferences = {};

std::string read_text(const fs::path& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read " + path.string());
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

fs::path golden_dir() { return fs::path(vkllm::test::source_dir()) / "tests" / "golden" / "templates"; }

// Where two texts first differ, with a little context, for a readable failure.
std::string first_difference(const std::string& got, const std::string& want) {
    size_t i = 0;
    while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
    size_t from = i > 40 ? i - 40 : 0;
    return "first difference at byte " + std::to_string(i) + "\n  got:  " + json(got.substr(from, 100)).dump() +
           "\n  want: " + json(want.substr(from, 100)).dump();
}

// jinja2's message without Python's exception class ("TypeError: ..."); raise_exception's as is.
std::string jinja2_message(const json& render) {
    std::string m = render["error"].get<std::string>();
    if (render["raised"].get<bool>()) return m;
    size_t colon = m.find(": ");
    return colon == std::string::npos ? m : m.substr(colon + 2);
}

struct Conversation {
    std::string messages, tools, extra;
};

TEST(Templates, EveryGoldenRenderingMatches) {
    json conversations = json::parse(read_text(golden_dir() / "conversations.json"));
    std::map<std::string, Conversation> by_name;
    for (const auto& c : conversations) {
        Conversation conv;
        conv.messages = c["messages"].dump();
        if (c.contains("tools")) conv.tools = c["tools"].dump();
        if (c.contains("extra")) conv.extra = c["extra"].dump();
        by_name[c["name"].get<std::string>()] = conv;
    }
    std::vector<fs::path> goldens;
    for (const auto& e : fs::directory_iterator(golden_dir() / "expected"))
        if (e.path().extension() == ".json") goldens.push_back(e.path());
    std::sort(goldens.begin(), goldens.end());
    ASSERT_GE(goldens.size(), 60u) << "golden renderings missing from " << golden_dir();

    int templates_ok = 0, renders_ok = 0, renders = 0;
    for (const auto& path : goldens) {
        json golden = json::parse(read_text(path));
        std::string name = golden["template"].get<std::string>();
        if (auto known = kKnownDifferences.find(name); known != kKnownDifferences.end()) {
            std::printf("skipped %s: %s\n", name.c_str(), known->second.c_str());
            continue;
        }
        std::string source = read_text(golden_dir() / name);
        bool all_ok = true;
        for (const auto& r : golden["renders"]) {
            const Conversation& conv = by_name.at(r["conversation"].get<std::string>());
            vkllm::ChatTemplateInputs in;
            in.messages_json = conv.messages;
            in.tools_json = conv.tools;
            in.extra_json = conv.extra;
            in.add_generation_prompt = r["add_generation_prompt"].get<bool>();
            in.bos_token = "<s>";
            in.eos_token = "</s>";
            in.now = "2026-01-15";
            std::string where = name + " / " + r["conversation"].get<std::string>() +
                                (in.add_generation_prompt ? " / generation prompt" : "");
            ++renders;
            bool ok = true;
            try {
                std::string got = vkllm::render_chat_template(source, in);
                if (r.contains("error")) {
                    ADD_FAILURE() << where << ": rendered, but jinja2 failed: " << r["error"].get<std::string>();
                    ok = false;
                } else if (got != r["output"].get<std::string>()) {
                    ADD_FAILURE() << where << ": " << first_difference(got, r["output"].get<std::string>());
                    ok = false;
                }
            } catch (const vkllm::TemplateError& e) {
                if (!r.contains("error")) {
                    ADD_FAILURE() << where << ": " << e.what();
                    ok = false;
                } else if (e.raised() != r["raised"].get<bool>() || e.message() != jinja2_message(r)) {
                    ADD_FAILURE() << where << ": jinja2 failed with " << r["error"] << ", vkllm with "
                                  << (e.raised() ? "raise_exception: " : "") << e.what();
                    ok = false;
                }
            }
            renders_ok += ok;
            all_ok = all_ok && ok;
        }
        templates_ok += all_ok;
    }
    std::printf("%d of %zu templates, %d of %d renderings match jinja2\n", templates_ok,
                goldens.size() - kKnownDifferences.size(), renders_ok, renders);
}

}  // namespace
