// The conversation `vkllm chat` holds: its messages, and the tokens the model has seen and said,
// kept token for token so each new turn adds only its own tokens to the prompt (the Session's
// prefix reuse then evaluates only those).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chat_prompt.h"

namespace vkllm::cli {

class ChatConversation {
public:
    // `system`: an optional system message (empty: none).
    ChatConversation(const ChatFormat& format, const std::string& system);

    // Adds the user's message and returns the whole prompt: the conversation's tokens so far,
    // then the new turn's (the user's message and the opening of the answer).
    std::vector<int32_t> begin_turn(const std::string& user);
    // The text of the prompt begin_turn returned (the conversation rendered).
    const std::string& prompt_text() const { return prompt_text_; }
    // The answer to the turn begin_turn opened: its text and the tokens generated
    // (the end-of-generation token included when it ended with one).
    void end_turn(const std::string& answer, const std::vector<int32_t>& generated, int32_t eog_token);
    // Forgets the turn begin_turn opened (its prompt did not fit, the template failed).
    void abandon_turn();

    bool undo();   // drops the last turn (user message and answer); false when there is none
    void reset();  // back to the system message alone

    const std::vector<ChatMessage>& messages() const { return messages_; }
    // The conversation's tokens so far (the next prompt starts with them).
    const std::vector<int32_t>& tokens() const { return tokens_; }
    int turns() const { return int(marks_.size()); }

    // Replaces the conversation with saved messages (app::read_conversation's: a system message
    // first, then user and assistant in turn). Throws what the template throws when it cannot
    // render them, and leaves the conversation as it was.
    void load(std::vector<ChatMessage> messages);

private:
    // What the conversation is before a turn (for undo). A mark that is not `known` holds the
    // message count alone: its state is fresh(n_messages), worked out when it is restored (a
    // loaded conversation's marks: rendering every one up front would take time and memory
    // quadratic in its length).
    struct Mark {
        size_t n_messages = 0;
        bool known = true;
        std::vector<int32_t> tokens;
        std::string rendered, pending;
    };
    Mark mark() const { return {messages_.size(), true, tokens_, rendered_, pending_}; }
    void restore(const Mark& m);
    // The state a conversation of these messages starts from when nothing is known of its tokens.
    Mark fresh(size_t n_messages) const;

    const ChatFormat& format_;
    std::vector<ChatMessage> messages_;
    std::vector<int32_t> tokens_;     // what the model has seen and said, in order
    std::string rendered_;            // the messages rendered (no generation prompt); tokens_ spell it, but for:
    std::string pending_;             // its end, text not yet in tokens_ (the template's text after an answer)
    std::vector<Mark> marks_;         // the state before each turn
    std::string prompt_text_;
    std::vector<int32_t> prompt_tokens_;
};

}  // namespace vkllm::cli
