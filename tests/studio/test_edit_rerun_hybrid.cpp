// The studio on zoo-hybrid (Mamba-2 layers and one attention layer) under Xvfb (started here):
// a conversation whose second message is edited and run again (the script's `edit`) ends as a
// fresh conversation of the same messages (the recurrent state comes back from a snapshot), and
// the export carries the State window's numbers under `vkllm probe`'s keys: `state` (each
// recurrent layer's heads, norm and decay per position) and `state_maps` (the chosen Mamba-2
// layer's mixing maps), with the state's and its snapshots' bytes under `memory`.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "xvfb.h"

namespace fs = std::filesystem;

namespace {

using nlohmann::json;
using vkllm::test::studio_binary;
using vkllm::test::Xvfb;

// Runs `script` on zoo-hybrid with the State window on layer 0, head 1, then exports to
// dir/export.json; returns the exit status.
int run_script(const Xvfb& x, const std::string& script, const std::string& dir) {
    fs::create_directories(dir);
    std::ofstream(dir + "/script.txt") << "state 0 1\ntokens 10\n" << script << "export " << dir << "/export.json\n";
    const std::string cmd = "DISPLAY=" + x.display() + " '" + studio_binary() + "' -m '" +
                            vkllm::test::source_dir() + "/assets/zoo/zoo-hybrid.gguf" +
                            "' --temp 0 --panels chat --size 1280x800 --config-dir '" + dir + "/config' --script '" + dir +
                            "/script.txt' --exit 2> '" + dir + "/stderr.txt'";
    const int raw = std::system(cmd.c_str());
    return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

json read_json(const std::string& path) {
    std::ifstream in(path);
    return json::parse(in);
}

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(EditRerunHybrid, EditedConversationIsAFreshOnesAndTheExportHasTheState) {
    ASSERT_TRUE(fs::exists(studio_binary())) << studio_binary();
    Xvfb x(750);
    ASSERT_TRUE(x.running()) << "Xvfb did not start";
    const std::string dir = vkllm::test::temp_path("edit-rerun-hybrid");
    ASSERT_EQ(run_script(x, "send Once upon a time\nsend The dog ran\nedit 2 One day, a girl\n", dir + "/edited"), 0)
        << read_text(dir + "/edited/stderr.txt");
    ASSERT_EQ(run_script(x, "send Once upon a time\nsend One day, a girl\n", dir + "/fresh"), 0)
        << read_text(dir + "/fresh/stderr.txt");
    const json edited = read_json(dir + "/edited/export.json"), fresh = read_json(dir + "/fresh/export.json");

    ASSERT_EQ(edited["messages"].size(), 4u) << edited["messages"].dump();
    EXPECT_EQ(edited["messages"][2]["text"], "One day, a girl");
    EXPECT_EQ(edited["messages"], fresh["messages"]);
    EXPECT_EQ(edited["generated_text"], fresh["generated_text"]);
    EXPECT_FALSE(edited["generated_text"].get<std::string>().empty());

    // The State window's numbers: every Mamba-2 layer's heads (layers 0-2 and 4-5; 3 is
    // attention), a norm and a decay per position of the conversation, and layer 0's head 1 map.
    const json& state = fresh["state"];
    ASSERT_TRUE(state.is_array());
    ASSERT_FALSE(state.empty());
    const size_t n_tokens = fresh["tokens"].size();
    for (const json& t : state) {
        EXPECT_NE(t["layer"], 3);
        EXPECT_EQ(t["kind"], "ssd");
        EXPECT_EQ(t["norm"].size(), t["positions"].size());
        EXPECT_EQ(t["decay"].size(), t["positions"].size());
        EXPECT_GE(t["positions"].size() + 1, n_tokens) << "one value per evaluated token";
    }
    bool head1 = false;
    ASSERT_FALSE(fresh["state_maps"].empty());
    for (const json& map : fresh["state_maps"]) {
        EXPECT_EQ(map["layer"], 0);
        EXPECT_EQ(map["kind"], "state_mixing");
        head1 = head1 || map["head"] == 1;
        ASSERT_EQ(map["values"].size(), map["query_pos"].size());
        ASSERT_FALSE(map["values"].empty());
        EXPECT_EQ(map["values"].back().size(), map["key_pos"].size());
    }
    EXPECT_TRUE(head1);
    const json& memory = fresh["memory"];
    EXPECT_GT(memory["recurrent_state"].get<uint64_t>(), 0u);
    EXPECT_EQ(memory["state_snapshots"].get<uint64_t>() % memory["recurrent_state"].get<uint64_t>(), 0u);
    EXPECT_GT(memory["state_snapshots"].get<uint64_t>(), 0u);
    fs::remove_all(dir);
}

}  // namespace
