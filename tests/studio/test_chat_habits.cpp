// The chat's habits on plain data (no window): recalling sent messages, fenced code blocks, the
// conversation file both front-ends read and write (app/common), model facts and the tiled
// layout's geometry.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "code_blocks.h"
#include "conversation_file.h"
#include "input_history.h"
#include "model_facts.h"
#include "test_support.h"
#include "tile_layout.h"

using namespace vkllm;
using namespace vkllm::studio;
using vkllm::app::conversation_json;
using vkllm::app::parse_conversation;
using vkllm::app::read_conversation;
using vkllm::app::write_conversation;
namespace fs = std::filesystem;

TEST(InputHistory, UpRecallsFromAnEmptyBoxOnly) {
    InputHistory h;
    EXPECT_FALSE(h.recall("", true));  // nothing sent yet
    h.add("first");
    h.add("second");
    h.add("second");  // a repeat is kept once
    h.add("");
    EXPECT_FALSE(h.recall("my own text", true)) << "Up in a box with the user's text moves the cursor";
    EXPECT_EQ(h.recall("", true).value(), "second");
    EXPECT_EQ(h.recall("second", true).value(), "first");
    EXPECT_EQ(h.recall("first", true).value(), "first");  // the oldest stays
    EXPECT_EQ(h.recall("first", false).value(), "second");
    EXPECT_EQ(h.recall("second", false).value(), "");  // past the newest: empty again
    EXPECT_FALSE(h.recall("", false));
    // A recalled message the user edited is theirs now: Up moves the cursor.
    EXPECT_EQ(h.recall("", true).value(), "second");
    EXPECT_FALSE(h.recall("second, edited", true));
}

TEST(CodeBlocks, FencesSplitProseFromCode) {
    const std::string text = "Try this:\n```python\nprint(1)\nx = 2\n```\nThen run it.";
    const auto s = split_code_blocks(text);
    ASSERT_EQ(s.size(), 3u);
    EXPECT_FALSE(s[0].code);
    EXPECT_EQ(text.substr(s[0].begin, s[0].end - s[0].begin), "Try this:");
    EXPECT_TRUE(s[1].code);
    EXPECT_EQ(s[1].language, "python");
    EXPECT_EQ(text.substr(s[1].begin, s[1].end - s[1].begin), "print(1)\nx = 2");
    EXPECT_FALSE(s[2].code);
    EXPECT_EQ(text.substr(s[2].begin, s[2].end - s[2].begin), "Then run it.");
}

TEST(CodeBlocks, AnOpenFenceRunsToTheEndAndProseAloneIsOneSegment) {
    const std::string streaming = "```\nint main() {";
    auto s = split_code_blocks(streaming);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_TRUE(s[0].code);
    EXPECT_EQ(s[0].language, "");
    EXPECT_EQ(streaming.substr(s[0].begin), "int main() {");
    s = split_code_blocks("no code here, ``` inside a line is not a fence");
    ASSERT_EQ(s.size(), 1u);
    EXPECT_FALSE(s[0].code);
    EXPECT_TRUE(split_code_blocks("").empty());
    // Indented by up to three spaces still fences; an empty block is still a block.
    s = split_code_blocks("a\n   ```\n```\nb");
    ASSERT_EQ(s.size(), 3u);
    EXPECT_TRUE(s[1].code);
    EXPECT_EQ(s[1].begin, s[1].end);
}

TEST(ConversationFile, RoundTripsWhatVkllmChatSaves) {
    const std::string dir = test::temp_path("studio-conversation");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string saved = dir + "/cli.json";
    const auto r = test::shell("printf 'Hello there\\n/save " + saved + "\\n/exit\\n' | '" + test::vkllm_bin() +
                               "' chat --system 'Be brief' -n 6 --temp 0 2>&1");
    ASSERT_EQ(r.code, 0) << r.out;
    std::stringstream text;
    text << std::ifstream(saved).rdbuf();
    const std::vector<ChatMessage> m = read_conversation(saved);
    ASSERT_EQ(m.size(), 3u);
    EXPECT_EQ(m[0].role, "system");
    EXPECT_EQ(m[0].content, "Be brief");
    EXPECT_EQ(m[1].role, "user");
    EXPECT_EQ(m[1].content, "Hello there");
    EXPECT_EQ(m[2].role, "assistant");
    // Written back byte for byte as the CLI wrote it, and the CLI reads the studio's file.
    EXPECT_EQ(conversation_json(m), text.str());
    const std::string mine = dir + "/studio.json";
    write_conversation(mine, m);
    const auto back = test::shell("printf '/load " + mine + "\\n/exit\\n' | '" + test::vkllm_bin() +
                                  "' chat -n 4 --temp 0 2>&1");
    ASSERT_EQ(back.code, 0) << back.out;
    EXPECT_NE(back.out.find("loaded 1 turns"), std::string::npos) << back.out;
}

// The bytes both front-ends write, spelled out: keys in order, indented by two, a final newline,
// escapes, UTF-8 kept and an invalid byte written as U+FFFD. Files saved before keep loading.
TEST(ConversationFile, WritesTheDocumentByteForByte) {
    const std::vector<ChatMessage> m = {
        {"system", "Be brief"}, {"user", "Caf\xc3\xa9 \"q\"\n\ttab"}, {"assistant", "bad \xff byte"}};
    const std::string expected =
        "{\n"
        "  \"format\": \"vkllm-chat\",\n"
        "  \"messages\": [\n"
        "    {\n"
        "      \"content\": \"Be brief\",\n"
        "      \"role\": \"system\"\n"
        "    },\n"
        "    {\n"
        "      \"content\": \"Caf\xc3\xa9 \\\"q\\\"\\n\\ttab\",\n"
        "      \"role\": \"user\"\n"
        "    },\n"
        "    {\n"
        "      \"content\": \"bad \xef\xbf\xbd byte\",\n"
        "      \"role\": \"assistant\"\n"
        "    }\n"
        "  ],\n"
        "  \"version\": 1\n"
        "}\n";
    EXPECT_EQ(conversation_json(m), expected);
    EXPECT_EQ(conversation_json({}), "{\n  \"format\": \"vkllm-chat\",\n  \"messages\": [],\n  \"version\": 1\n}\n");
    const std::vector<ChatMessage> back = parse_conversation(expected);
    ASSERT_EQ(back.size(), 3u);
    EXPECT_EQ(back[1].content, m[1].content);
    EXPECT_EQ(back[2].content, "bad \xef\xbf\xbd byte");
}

TEST(ConversationFile, BadDocumentsSayWhatIsWrong) {
    auto error_of = [](const std::string& text) {
        try {
            parse_conversation(text);
        } catch (const std::runtime_error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(error_of("{").find("not JSON"), std::string::npos);
    EXPECT_NE(error_of("{\"messages\": []}").find("not a vkllm chat conversation"), std::string::npos);
    EXPECT_NE(error_of("{\"format\": \"vkllm-chat\", \"messages\": [{\"role\": \"assistant\", \"content\": \"x\"}]}")
                  .find("where \"user\" belongs"),
              std::string::npos);
    EXPECT_NE(error_of("{\"format\": \"vkllm-chat\", \"messages\": [{\"role\": \"user\"}]}").find("message 0"),
              std::string::npos);
    EXPECT_EQ(error_of("{\"format\": \"vkllm-chat\", \"version\": 1, \"messages\": []}"), "no error");
    EXPECT_NE(error_of("{\"format\": 1, \"messages\": []}").find("not a vkllm chat conversation"), std::string::npos);
    EXPECT_NE(error_of("{\"format\": \"vkllm-chat\", \"version\": 2, \"messages\": []}").find("\"version\": 2"),
              std::string::npos);
    EXPECT_NE(error_of("{\"format\": \"vkllm-chat\", \"messages\": {}}").find("\"messages\" must be a list"),
              std::string::npos);
    EXPECT_NE(error_of("{\"format\": \"vkllm-chat\", \"messages\": [{\"role\": \"user\", \"content\": \"a\"},"
                       " {\"role\": \"user\", \"content\": \"b\"}]}")
                  .find("message 1 has role \"user\" where \"assistant\" belongs"),
              std::string::npos);
    // A question never answered is a conversation too (the last message a user's).
    EXPECT_EQ(error_of("{\"format\": \"vkllm-chat\", \"messages\": [{\"role\": \"system\", \"content\": \"s\"},"
                       " {\"role\": \"user\", \"content\": \"q\"}]}"),
              "no error");
    try {
        read_conversation(test::temp_path("no-such-conversation.json"));
        FAIL() << "a missing file must throw";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("no-such-conversation.json"), std::string::npos) << e.what();
    }
    // A bad file's error names it; a write that cannot happen names the target and leaves nothing.
    const std::string dir = test::temp_path("bad-conversations");
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir + "/bad.json") << "[1, 2]";
    try {
        read_conversation(dir + "/bad.json");
        FAIL() << "a file that is not a conversation must throw";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("cannot load " + dir + "/bad.json: not a vkllm chat"), std::string::npos)
            << e.what();
    }
    try {
        write_conversation(dir + "/no-such-folder/c.json", {{"user", "hi"}});
        FAIL() << "a folder that does not exist must throw";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("cannot write " + dir + "/no-such-folder/c.json"), std::string::npos)
            << e.what();
    }
    // Over an existing file: the new document whole, and no temporary left beside it.
    write_conversation(dir + "/bad.json", {{"user", "hi"}});
    EXPECT_EQ(read_conversation(dir + "/bad.json").size(), 1u);
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

TEST(ModelFacts, FromTheFileHeader) {
    const std::string file = test::source_dir() + "/assets/zoo/zoo-dense.gguf";
    const auto facts = read_model_facts(file);
    auto fact = [&](const std::string& label) {
        for (const ModelFact& f : facts)
            if (f.label == label) return f.value;
        return std::string("(absent)");
    };
    EXPECT_EQ(fact("architecture"), "llama");
    EXPECT_EQ(fact("chat template"), "none (plain continuation)");
    EXPECT_EQ(fact("quantisation"), "F32 100%");
    EXPECT_NE(fact("context").find("256"), std::string::npos) << fact("context");
    EXPECT_NE(fact("parameters").find(" K"), std::string::npos) << fact("parameters");
    EXPECT_NE(fact("file").find("MiB"), std::string::npos) << fact("file");
    EXPECT_EQ(count_text(1500000), "1.50 M");
    EXPECT_EQ(bytes_text(3 << 20), "3.00 MiB");
    EXPECT_THROW(read_model_facts(test::temp_path("no-such-model.gguf")), std::runtime_error);
}

namespace {

bool overlap(const Rect& a, const Rect& b) {
    return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

// Every shown panel inside the area, none over another, and together with the gaps they fill it.
void expect_tiled(const Tiling& t, const std::array<bool, PanelCount>& open, Rect area, float gap) {
    double covered = 0;
    for (int p = 0; p < PanelCount; ++p) {
        const Rect& r = t.panels[size_t(p)];
        EXPECT_EQ(!r.empty(), open[size_t(p)]) << panel_name(p);
        if (r.empty()) continue;
        EXPECT_GE(r.x, area.x);
        EXPECT_GE(r.y, area.y);
        EXPECT_LE(r.x + r.w, area.x + area.w + 0.01f) << panel_name(p);
        EXPECT_LE(r.y + r.h, area.y + area.h + 0.01f) << panel_name(p);
        covered += double(r.w) * r.h;
        for (int q = p + 1; q < PanelCount; ++q)
            EXPECT_FALSE(overlap(r, t.panels[size_t(q)])) << panel_name(p) << " and " << panel_name(q);
        for (const Splitter& s : t.splitters) EXPECT_FALSE(overlap(r, s.r)) << panel_name(p);
    }
    for (const Splitter& s : t.splitters) covered += double(s.r.w) * s.r.h;
    if (std::none_of(open.begin(), open.end(), [](bool o) { return o; })) return;
    // Gaps where splitters cross are counted twice at most: a few gap squares.
    EXPECT_NEAR(covered, double(area.w) * area.h, 16.0 * gap * gap) << "the panels leave holes";
}

}  // namespace

TEST(TileLayout, PanelsTileWithoutOverlapWhateverIsOpen) {
    const TileLayout l = default_layout();
    ASSERT_TRUE(valid_layout(l));
    const Rect area{0, 20, 1280, 760};
    std::array<bool, PanelCount> open;
    open.fill(true);
    expect_tiled(tile(l, open, -1, area, 6), open, area, 6);
    // Closing panels gives their room to the others, whichever ones close.
    for (int mask = 0; mask < (1 << PanelCount); mask += 7) {
        for (int p = 0; p < PanelCount; ++p) open[size_t(p)] = (mask >> p) & 1;
        expect_tiled(tile(l, open, -1, area, 6), open, area, 6);
    }
    // Maximised: one panel, the whole area, no splitters.
    open.fill(true);
    const Tiling m = tile(l, open, PanelAttention, area, 6);
    EXPECT_TRUE(m.splitters.empty());
    for (int p = 0; p < PanelCount; ++p)
        EXPECT_EQ(m.panels[size_t(p)].empty(), p != PanelAttention);
    EXPECT_EQ(m.panels[PanelAttention].w, area.w);
}

TEST(TileLayout, DraggingASplitterMovesOnlyItsNeighboursAndKeepsAMinimum) {
    TileLayout l = default_layout();
    std::array<bool, PanelCount> open;
    open.fill(true);
    const Rect area{0, 0, 1000, 800};
    Tiling t = tile(l, open, -1, area, 6);
    const Splitter* columns = nullptr;
    for (const Splitter& s : t.splitters)
        if (s.level == 0 && s.a == 0) columns = &s;
    ASSERT_NE(columns, nullptr);
    const float chat_w = t.panels[PanelChat].w, right_w = t.panels[PanelTelemetry].w;
    drag_splitter(l, *columns, 100, 80);
    t = tile(l, open, -1, area, 6);
    EXPECT_NEAR(t.panels[PanelChat].w, chat_w + 100, 1.5);
    EXPECT_NEAR(t.panels[PanelTelemetry].w, right_w, 1.5) << "the third column moved";
    expect_tiled(t, open, area, 6);
    for (const Splitter& s : t.splitters)
        if (s.level == 0 && s.a == 0) drag_splitter(l, s, -5000, 80);
    t = tile(l, open, -1, area, 6);
    EXPECT_NEAR(t.panels[PanelChat].w, 80, 1.5);
    // Saved and read back as it was; a broken one gives the default.
    EXPECT_EQ(layout_from_json(layout_json(l)), l);
    EXPECT_EQ(layout_from_json(nlohmann::json::parse("[{\"width\": 1, \"rows\": []}]")), default_layout());
    TileLayout twice = default_layout();
    twice.columns[0].rows[0].panels[0] = PanelLens;  // the lens twice, no chat
    EXPECT_FALSE(valid_layout(twice));
}
