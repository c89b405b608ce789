#include "chat_conversation.h"

namespace vkllm::cli {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

void append(std::vector<int32_t>& to, const std::vector<int32_t>& more) { to.insert(to.end(), more.begin(), more.end()); }

}  // namespace

ChatConversation::ChatConversation(const ChatFormat& format, const std::string& system) : format_(format) {
    if (!system.empty()) messages_.push_back({"system", system});
}

std::vector<int32_t> ChatConversation::begin_turn(const std::string& user) {
    marks_.push_back(mark());
    messages_.push_back({"user", user});
    try {
        prompt_text_ = format_.render(messages_, /*add_generation_prompt=*/true);
    } catch (...) {
        abandon_turn();
        throw;
    }
    if (!tokens_.empty() && starts_with(prompt_text_, rendered_)) {
        // The usual case: the new prompt is the conversation so far plus text. The text after
        // the last answer is tokenized as one piece with the new turn's, as in a whole prompt.
        prompt_tokens_ = tokens_;
        append(prompt_tokens_, format_.tokenize_continuation(pending_ + prompt_text_.substr(rendered_.size())));
    } else {
        // The first turn, or a template that renders earlier turns differently once a new one
        // follows: the whole prompt afresh (the Session still reuses its longest common prefix).
        prompt_tokens_ = format_.tokenize_whole(prompt_text_);
    }
    return prompt_tokens_;
}

void ChatConversation::end_turn(const std::string& answer, const std::vector<int32_t>& generated, int32_t eog_token) {
    messages_.push_back({"assistant", answer});
    const std::string head = prompt_text_ + answer;
    std::vector<int32_t> said = generated;
    if (eog_token >= 0 && !said.empty() && said.back() == eog_token) said.pop_back();
    std::string past;
    try {
        past = format_.render(messages_, /*add_generation_prompt=*/false);
    } catch (const TemplateError&) {
        past = head;  // a template that will not end on an answer: the answer as the model said it
    }
    if (starts_with(past, head)) {
        tokens_ = prompt_tokens_;
        append(tokens_, said);
        pending_ = past.substr(head.size());
        // The template closes the answer with the end-of-generation token the model produced:
        // keep the model's own token for it.
        const std::string eog_text = eog_token >= 0 ? format_.model().token_text(eog_token) : std::string();
        if (!eog_text.empty() && format_.templated() && starts_with(pending_, eog_text)) {
            tokens_.push_back(eog_token);
            pending_.erase(0, eog_text.size());
        }
    } else {
        tokens_ = format_.tokenize_whole(past);
        pending_.clear();
    }
    rendered_ = past;
}

void ChatConversation::abandon_turn() {
    if (marks_.empty()) return;
    restore(marks_.back());
    marks_.pop_back();
}

bool ChatConversation::undo() {
    if (marks_.empty()) return false;
    abandon_turn();
    return true;
}

void ChatConversation::reset() {
    const bool has_system = !messages_.empty() && messages_.front().role == "system";
    restore(fresh(has_system ? 1 : 0));
    marks_.clear();
}

void ChatConversation::restore(const Mark& m) {
    if (!m.known) {
        Mark state;
        try {
            state = fresh(m.n_messages);
        } catch (const TemplateError&) {
            state.n_messages = m.n_messages;  // nothing known of its tokens: the next prompt is tokenized whole
        }
        restore(state);
        return;
    }
    messages_.resize(m.n_messages);
    tokens_ = m.tokens;
    rendered_ = m.rendered;
    pending_ = m.pending;
}

ChatConversation::Mark ChatConversation::fresh(size_t n_messages) const {
    Mark m;
    m.n_messages = n_messages;
    bool has_turn = false;
    for (size_t i = 0; i < n_messages; ++i) has_turn |= messages_[i].role != "system";
    if (!has_turn) return m;  // the first turn renders the whole prompt
    const std::vector<ChatMessage> head(messages_.begin(), messages_.begin() + long(n_messages));
    m.rendered = format_.render(head, /*add_generation_prompt=*/false);
    m.tokens = format_.tokenize_whole(m.rendered);
    return m;
}

void ChatConversation::load(std::vector<ChatMessage> messages) {
    const Mark before = mark();
    std::vector<ChatMessage> messages_before = messages_;
    std::vector<Mark> marks_before = marks_;
    try {
        messages_ = std::move(messages);
        marks_.clear();
        // Undo points before every user message (each worked out when undo reaches it), then the
        // conversation itself, rendered and tokenized once.
        for (size_t i = 0; i < messages_.size(); ++i)
            if (messages_[i].role == "user") marks_.push_back(Mark{i, false, {}, {}, {}});
        restore(fresh(messages_.size()));
    } catch (...) {  // the template cannot render it: keep the conversation as it was
        messages_ = std::move(messages_before);
        marks_ = std::move(marks_before);
        restore(before);
        throw;
    }
}

}  // namespace vkllm::cli
