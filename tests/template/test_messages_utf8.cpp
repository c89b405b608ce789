// A conversation's messages are rendered even when a reply holds bytes that are not UTF-8 (a
// model can write any byte token): those bytes become U+FFFD, the valid text around them is kept.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "vkllm/chat_template.h"

namespace {

const char* kTemplate =
    "{% for m in messages %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}";

TEST(ChatTemplateMessages, InvalidUtf8InAReplyBecomesReplacementCharacters) {
    const std::vector<vkllm::ChatMessage> messages = {
        {"user", "Hi!"},
        {"assistant", std::string("ok \xA2 and \xE2\x82 end")},  // a stray continuation byte, a cut character
        {"user", "caf\xC3\xA9"},                                 // valid two-byte UTF-8 stays as it is
    };
    const std::string out = vkllm::render_chat_template(kTemplate, messages, true);
    EXPECT_EQ(out, "<user>Hi!</user><assistant>ok \xEF\xBF\xBD and \xEF\xBF\xBD end</assistant>"
                   "<user>caf\xC3\xA9</user><assistant>");
}

}  // namespace
