// vkllm fill-mask on the trained zoo-bert (assets/zoo/zoo-bert.gguf): snippets of stories from
// the zoo corpus's held-out split (seed 1001; none of these texts occurs in the training split),
// each with one masked word that the corpus's phrasing forces ("Can I [MASK] with your cake?",
// "best [MASK]", "the end of the [MASK]", "Once upon a [MASK]"). The right word must be among
// the top 3. (Not tested, because zoo-bert has not learned it: copying a name or an object from
// an earlier sentence, "... named Anna. [MASK] had a green frog"; see assets/zoo/README.md.)
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace vkllm {
namespace {

struct Case {
    std::string text;    // one [MASK]
    std::string answer;  // the forced word (one WordPiece token in zoo-bert's vocabulary)
};

const Case kCases[] = {
    {"Nora had a black cake. \\\"Hello, Nora!\\\" said Kate. \\\"Can I [MASK] with your cake?\\\"", "play"},
    {"At last, they found Fluffy in the farm. Fluffy gave the hat back to Amy. Amy and Ben were best [MASK]. "
     "They played together every day.",
     "friends"},
    {"At the kitchen, Kate saw three things: apple, toy, stick. At the end of the [MASK], Kate was very happy. "
     "The end.",
     "day"},
    {"Once upon a [MASK], in a tiny house near the forest, lived a boy named Oscar. Oscar loved his mouse, Misty.",
     "time"},
    {"Amy and Ben looked for Fluffy everywhere. At last, they [MASK] Fluffy in the zoo.", "found"},
    {"Nora laughed and said it back: \\\"tila\\\". They said \\\"tila\\\" again and [MASK].", "again"},
};

TEST(FillMaskZoo, ForcedWordsAreInTheTopThree) {
    const std::string model = test::source_dir() + "/assets/zoo/zoo-bert.gguf";
    for (const Case& c : kCases) {
        SCOPED_TRACE(c.text);
        const test::ShellResult r =
            test::shell(test::vkllm_bin() + " fill-mask -m " + model + " -k 3 --json -p \"" + c.text + "\" 2>&1");
        ASSERT_EQ(r.code, 0) << r.out;
        const nlohmann::json j = nlohmann::json::parse(r.out);
        ASSERT_EQ(j.size(), 1u);
        std::string top;
        bool found = false;
        for (const auto& g : j[0]["top"]) {
            const std::string token = g["token"];
            top += token + " ";
            found = found || token == "\xE2\x96\x81" + c.answer;  // a word-initial piece
        }
        EXPECT_TRUE(found) << "expected '" << c.answer << "' in the top 3: " << top;
    }
}

}  // namespace
}  // namespace vkllm
