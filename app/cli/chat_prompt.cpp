#include "chat_prompt.h"

namespace vkllm::cli {

ChatFormat::ChatFormat(const Model& model, std::function<bool()> cancelled)
    : model_(model), source_(model.info().chat_template), cancelled_(std::move(cancelled)) {
    if (model.bos() >= 0) bos_text_ = model.token_text(model.bos());
    if (model.eos() >= 0) eos_text_ = model.token_text(model.eos());
}

std::string ChatFormat::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                               const std::function<bool()>& cancelled) const {
    if (templated()) {
        // Either callback stops the render.
        std::function<bool()> either = cancelled;
        if (cancelled_) either = cancelled ? std::function<bool()>([&] { return cancelled_() || cancelled(); }) : cancelled_;
        return render_chat_template(source_, messages, add_generation_prompt, bos_text_, eos_text_, either);
    }
    std::string text;
    for (const ChatMessage& m : messages) {
        if (!text.empty() && m.role != "assistant") text += '\n';
        text += m.content;
    }
    return text;
}

std::vector<int32_t> ChatFormat::tokenize_whole(const std::string& text) const {
    if (!templated()) return model_.tokenize(text, /*add_special=*/true);
    std::vector<int32_t> ids = model_.tokenize(text, /*add_special=*/false, /*parse_special=*/true);
    if (model_.add_bos() && model_.bos() >= 0 && (ids.empty() || ids.front() != model_.bos()))
        ids.insert(ids.begin(), model_.bos());
    return ids;
}

std::vector<int32_t> ChatFormat::tokenize_continuation(const std::string& text) const {
    std::vector<int32_t> ids = model_.tokenize(text, /*add_special=*/false, /*parse_special=*/templated());
    // SentencePiece vocabularies with add_space_prefix put a space before text at the start (as
    // for a whole prompt); in the middle of a conversation that space is not in the text, so a
    // lone space token made of it is dropped.
    if (!ids.empty() && !text.empty() && text[0] != ' ' && model_.piece(ids.front()) == " ") ids.erase(ids.begin());
    return ids;
}

}  // namespace vkllm::cli
