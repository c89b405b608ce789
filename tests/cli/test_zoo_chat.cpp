// zoo-chat, the project's chat model (assets/zoo, tools/zoo/train.py zoo-chat on corpus_chat.py's
// ChatML conversations): its file carries the ChatML template and end-of-turn token; `vkllm
// template` renders the template (its system slot filled or defaulted); each conversation of
// tests/golden/zoo/zoo-chat.prompts.json, rendered by `vkllm template` and tokenized with
// control tokens parsed, gives llama.cpp's prompt tokens (tools/zoo/tokenizer.py's, see
// scripts/make-golden-zoo.sh), its logits and its greedy answer up to <|im_end|>; and `vkllm chat`
// answers a typed user turn with that same answer, stopping at the end of its turn, then answers
// the next turn from the kept cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

using nlohmann::json;

std::string zoo_chat() { return test::source_dir() + "/assets/zoo/zoo-chat.gguf"; }
std::string golden(size_t i) { return test::source_dir() + "/tests/golden/zoo/zoo-chat-" + std::to_string(i); }

json golden_conversations() {
    std::ifstream in(test::source_dir() + "/tests/golden/zoo/zoo-chat.prompts.json");
    return json::parse(in);
}

// llama.cpp's greedy answer: up to and with the token that ended the turn.
std::vector<int32_t> golden_answer(size_t i) { return test::read_ids(golden(i) + ".greedy.txt"); }

TEST(ZooChat, FileCarriesTheChatMLTemplateAndEndOfTurn) {
    auto model = Model::load(zoo_chat());
    EXPECT_NE(model->info().chat_template.find("<|im_start|>"), std::string::npos);
    const int32_t start = model->find_token("<|im_start|>"), end = model->find_token("<|im_end|>");
    ASSERT_GE(start, 0);
    ASSERT_GE(end, 0);
    EXPECT_TRUE(model->is_control(start));
    EXPECT_TRUE(model->is_control(end));
    EXPECT_EQ(model->eos(), end);
    EXPECT_TRUE(model->is_eog(end));
    EXPECT_FALSE(model->is_eog(start));
    // Control-token text is one token when parsed, plain characters when not.
    EXPECT_EQ(model->tokenize("<|im_end|>", false, true), std::vector<int32_t>{end});
    EXPECT_GT(model->tokenize("<|im_end|>", false, false).size(), 1u);
}

TEST(ZooChat, TemplateCommandRendersChatMLWithASystemSlot) {
    const std::string defaulted = test::write_temp_file("zoo-chat-user.json", R"([{"role": "user", "content": "Hi!"}])");
    auto r = test::shell(test::vkllm_bin() + " template -m " + zoo_chat() + " --messages " + defaulted +
                         " --add-generation-prompt");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(r.out,
              "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
              "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n");
    const std::string with_system = test::write_temp_file(
        "zoo-chat-system.json", R"([{"role": "system", "content": "You are Zoo."}, {"role": "user", "content": "Hi!"},
                                    {"role": "assistant", "content": "Hello!"}])");
    r = test::shell(test::vkllm_bin() + " template -m " + zoo_chat() + " --messages " + with_system);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(r.out,
              "<|im_start|>system\nYou are Zoo.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n"
              "<|im_start|>assistant\nHello!<|im_end|>\n");
}

TEST(ZooChat, AnswersThroughTheTemplateMatchLlamaCpp) {
    auto model = Model::load(zoo_chat());
    const json conversations = golden_conversations();
    ASSERT_EQ(conversations.size(), 5u);
    for (size_t i = 0; i < conversations.size(); ++i) {
        SCOPED_TRACE("conversation " + conversations[i].dump());
        const std::string messages = test::write_temp_file("zoo-chat-" + std::to_string(i) + ".json", conversations[i].dump());
        const auto rendered = test::shell(test::vkllm_bin() + " template -m " + zoo_chat() + " --messages " + messages +
                                          " --add-generation-prompt");
        ASSERT_EQ(rendered.code, 0) << rendered.out;
        const std::string& text = rendered.out;
        const std::vector<int32_t> tokens = model->tokenize(text, /*add_special=*/true, /*parse_special=*/true);
        ASSERT_EQ(tokens, test::read_ids(golden(i) + ".tokens.txt"));

        SessionOptions so;
        so.kv_cache = KvCacheType::F32;  // the golden's mode
        Session session(*model, so);
        std::vector<float> logits = session.eval(tokens, /*all_logits=*/true);
        const std::vector<float> ref = test::read_f32(golden(i) + ".logits.f32");
        ASSERT_EQ(logits.size(), ref.size());
        EXPECT_LE(test::max_abs_diff(logits, ref), 1e-3);

        // Greedy until the end of the turn, as llama.cpp's STOP_AT_EOG run did.
        const std::vector<int32_t> expected = golden_answer(i);
        std::vector<int32_t> got;
        std::vector<float> last(logits.end() - model->n_vocab(), logits.end());
        while (got.size() < expected.size()) {
            got.push_back(int32_t(std::max_element(last.begin(), last.end()) - last.begin()));
            if (model->is_eog(got.back())) break;
            last = session.eval({got.back()});
        }
        EXPECT_EQ(got, expected) << "vkllm: " << model->detokenize(got) << "\nllama.cpp: " << model->detokenize(expected);
        ASSERT_FALSE(expected.empty());
        EXPECT_EQ(expected.back(), model->eos()) << "the answer does not end its turn within the golden's tokens";
    }
}

TEST(ZooChat, ChatCommandAnswersAUserTurnAndStopsAtTheEndOfIt) {
    auto model = Model::load(zoo_chat());
    // Conversation 1 of the goldens is this user turn under the default system message.
    const json conversations = golden_conversations();
    ASSERT_EQ(conversations[1].size(), 1u);
    const std::string question = conversations[1][0]["content"];
    std::vector<int32_t> answer = golden_answer(1);
    ASSERT_EQ(answer.back(), model->eos());
    answer.pop_back();

    const std::string in = test::write_temp_file("zoo-chat-in.txt", question + "\nThank you!\n");
    const std::string err = test::temp_path("zoo-chat-err.txt");
    auto r = test::shell("cat " + in + " | " + test::vkllm_bin() + " chat -m " + zoo_chat() + " --temp 0 --verbose 2>" + err);
    std::ifstream e(err);
    const std::string stderr_text((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
    ASSERT_EQ(r.code, 0) << r.out << stderr_text;
    std::istringstream lines(r.out);
    std::string first, second;
    std::getline(lines, first);
    std::getline(lines, second);
    EXPECT_EQ(first, model->detokenize(answer));
    EXPECT_FALSE(second.empty());
    // Both answers end at <|im_end|>, not at the token limit; the second turn's prompt starts
    // with the first turn's tokens, kept in the cache.
    const std::regex turn("turn (\\d): (\\d+) prompt tokens, (\\d+) from the cache, \\d+ evaluated; (\\d+) generated \\((\\w+)\\)");
    std::vector<std::smatch> turns;
    for (auto it = std::sregex_iterator(stderr_text.begin(), stderr_text.end(), turn); it != std::sregex_iterator(); ++it)
        turns.push_back(*it);
    ASSERT_EQ(turns.size(), 2u) << stderr_text;
    for (const auto& t : turns) EXPECT_EQ(t[5].str(), "end_of_generation") << t[0].str();
    EXPECT_EQ(std::stoi(turns[0][2].str()), int(test::read_ids(golden(1) + ".tokens.txt").size()));
    EXPECT_EQ(std::stoi(turns[0][4].str()), int(answer.size()) + 1);
    EXPECT_GE(std::stoi(turns[1][3].str()), std::stoi(turns[0][2].str()));
}

}  // namespace
}  // namespace vkllm
