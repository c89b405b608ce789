// The merge loop shared by SentencePiece and byte-level BPE: a text split into UTF-8 characters
// kept as a linked list of symbols, and adjacent pairs merged from a priority queue until no
// pair may merge (as llama.cpp's tokenizers do).
#pragma once

#include <algorithm>
#include <optional>
#include <queue>
#include <string_view>
#include <vector>

#include "tokenizer/unicode.h"

namespace vkllm::tokenizer::detail {

struct Symbol {
    size_t start = 0;  // byte offset into the text
    size_t len = 0;    // bytes; 0 once merged into the symbol on its left
    int prev = -1;
    int next = -1;
};

// One symbol per UTF-8 character of `text` (a truncated sequence at the end is one symbol).
inline std::vector<Symbol> split_characters(std::string_view text) {
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
    return symbols;
}

// Merges adjacent symbols, the pair of highest priority first (ties: the leftmost pair).
// `priority(left, right)` gives a pair's priority, or nullopt when it may not merge.
template <class Priority>
void merge_symbols(std::vector<Symbol>& symbols, Priority priority) {
    struct Pair {
        int left, right;
        double priority;
        size_t len;  // bytes of the pair when queued: a changed pair is skipped
    };
    auto lower = [](const Pair& a, const Pair& b) {
        return a.priority < b.priority || (a.priority == b.priority && a.left > b.left);
    };
    std::priority_queue<Pair, std::vector<Pair>, decltype(lower)> queue(lower);
    auto try_add = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const std::optional<double> p = priority(symbols[size_t(left)], symbols[size_t(right)]);
        if (p) queue.push({left, right, *p, symbols[size_t(left)].len + symbols[size_t(right)].len});
    };
    for (int i = 1; i < int(symbols.size()); ++i) try_add(i - 1, i);

    while (!queue.empty()) {
        const Pair b = queue.top();
        queue.pop();
        Symbol& left = symbols[size_t(b.left)];
        Symbol& right = symbols[size_t(b.right)];
        // A symbol only grows by absorbing its right neighbour, so an unchanged total length
        // means neither side changed since the pair was queued.
        if (left.len == 0 || right.len == 0 || left.len + right.len != b.len) continue;
        left.len += right.len;
        right.len = 0;
        left.next = right.next;
        if (right.next >= 0) symbols[size_t(right.next)].prev = b.left;
        try_add(left.prev, b.left);
        try_add(b.left, left.next);
    }
}

}  // namespace vkllm::tokenizer::detail
