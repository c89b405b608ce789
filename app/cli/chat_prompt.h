// Turning a conversation into prompt tokens, for `vkllm chat` and `vkllm serve`: with the
// model's chat template when it has one (tokenizer.chat_template), else as plain text.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "vkllm/chat_template.h"
#include "vkllm/model.h"

namespace vkllm::cli {

// How a conversation is written out for one model.
class ChatFormat {
public:
    // `cancelled` (may be empty): polled by every render through this format, besides the
    // render's own (the owner's interrupt, e.g. Ctrl-C).
    explicit ChatFormat(const Model& model, std::function<bool()> cancelled = {});

    // False: the model has no chat template, and a conversation is plain text: the messages'
    // contents in order, an assistant message continuing the text before it, any other message
    // on a new line ("SYSTEM\nUSER1ANSWER1\nUSER2").
    bool templated() const { return !source_.empty(); }

    // The conversation as text; add_generation_prompt: followed by what opens the assistant's
    // answer. Throws TemplateError when the template cannot render it, or when `cancelled` (or
    // the format's own) returns true while it renders (then TemplateError::cancelled()).
    std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                       const std::function<bool()>& cancelled = {}) const;

    // The tokens of a whole rendered conversation: control-token text becomes control tokens
    // when templated, and a BOS is put first when the model wants one and the text has none.
    std::vector<int32_t> tokenize_whole(const std::string& text) const;
    // The tokens of text that continues a conversation (no BOS).
    std::vector<int32_t> tokenize_continuation(const std::string& text) const;

    const Model& model() const { return model_; }

private:
    const Model& model_;
    std::string source_;  // the template; empty: plain text
    std::string bos_text_, eos_text_;
    std::function<bool()> cancelled_;
};

}  // namespace vkllm::cli
