// SentencePiece-style merging (llama.cpp's SPM tokenizer, from llama.cpp commit 074bea2e).
#include <algorithm>
#include <queue>

#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace vkllm::tokenizer::detail {

namespace {

struct Symbol {
    size_t start = 0;  // byte offset into the text
    size_t len = 0;    // bytes; 0 once merged into the symbol on its left
    int prev = -1;
    int next = -1;
};

struct Bigram {
    int left;
    int right;
    float score;
    size_t len;  // bytes of the pair when it was queued: detects pairs that changed since
};

// Highest score first; among equal scores the leftmost pair.
struct BigramOrder {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

}  // namespace

void spm_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) {
    std::vector<Symbol> symbols;
    for (size_t offset = 0; offset < text.size();) {
        Symbol s;
        s.start = offset;
        s.len = std::min(unicode::utf8_sequence_length(uint8_t(text[offset])), text.size() - offset);
        s.prev = int(symbols.size()) - 1;
        offset += s.len;
        s.next = offset == text.size() ? -1 : int(symbols.size()) + 1;
        symbols.push_back(s);
    }
    if (symbols.empty()) return;

    std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
    auto try_add = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const size_t len = symbols[size_t(left)].len + symbols[size_t(right)].len;
        const int32_t id = vocab.find(text.substr(symbols[size_t(left)].start, len));
        if (id < 0) return;
        queue.push({left, right, vocab.score[size_t(id)], len});
    };
    for (int i = 1; i < int(symbols.size()); ++i) try_add(i - 1, i);

    while (!queue.empty()) {
        const Bigram b = queue.top();
        queue.pop();
        Symbol& left = symbols[size_t(b.left)];
        Symbol& right = symbols[size_t(b.right)];
        // A symbol only grows by absorbing its right neighbour, so equal total length means
        // neither side changed since the pair was queued.
        if (left.len == 0 || right.len == 0 || left.len + right.len != b.len) continue;
        left.len += right.len;
        right.len = 0;
        left.next = right.next;
        if (right.next >= 0) symbols[size_t(right.next)].prev = b.left;
        try_add(left.prev, b.left);
        try_add(b.left, left.next);
    }

    for (int i = 0; i != -1; i = symbols[size_t(i)].next) {
        const Symbol& s = symbols[size_t(i)];
        const std::string_view piece = text.substr(s.start, s.len);
        const int32_t id = vocab.find(piece);
        if (id >= 0) {
            out.push_back(id);
            continue;
        }
        // Byte fallback: <0xXX> tokens, else a one-byte token, else <unk>.
        for (char c : piece) {
            int32_t byte_id = vocab.byte_token[uint8_t(c)];
            if (byte_id < 0) byte_id = vocab.find(std::string_view(&c, 1));
            if (byte_id < 0) byte_id = vocab.unk;
            if (byte_id >= 0) out.push_back(byte_id);
        }
    }
}

}  // namespace vkllm::tokenizer::detail
