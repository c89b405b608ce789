// Byte-level BPE merging of one pre-tokenized word (GPT-2's algorithm, run with a priority
// queue of adjacent pairs as llama.cpp does).
#include <algorithm>
#include <queue>

#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace vkllm::tokenizer::detail {

BpeMerges::BpeMerges(const std::vector<std::string>& merges) {
    ranks_.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) ranks_.emplace(merges[i], int32_t(i));  // first rank wins
}

int32_t BpeMerges::rank(std::string_view left, std::string_view right) const {
    thread_local std::string key;
    key.assign(left);
    key.push_back(' ');
    key.append(right);
    auto it = ranks_.find(std::string_view(key));
    return it == ranks_.end() ? -1 : it->second;
}

namespace {

struct Symbol {
    size_t start = 0;
    size_t len = 0;  // 0 once merged into its left neighbour
    int prev = -1;
    int next = -1;
};

struct Bigram {
    int left;
    int right;
    int32_t rank;
    size_t len;
};

// Lowest rank first; among equal ranks the leftmost pair.
struct BigramOrder {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

}  // namespace

void bpe_encode_word(const Vocab& vocab, const BpeMerges& merges, std::string_view word, bool ignore_merges,
                     std::vector<int32_t>& out) {
    if (word.empty()) return;
    if (ignore_merges) {
        const int32_t id = vocab.find(word);
        if (id >= 0) {
            out.push_back(id);
            return;
        }
    }

    std::vector<Symbol> symbols;
    for (size_t offset = 0; offset < word.size();) {
        Symbol s;
        s.start = offset;
        s.len = std::min(unicode::utf8_sequence_length(uint8_t(word[offset])), word.size() - offset);
        s.prev = int(symbols.size()) - 1;
        offset += s.len;
        s.next = offset == word.size() ? -1 : int(symbols.size()) + 1;
        symbols.push_back(s);
    }

    std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
    auto try_add = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const Symbol& l = symbols[size_t(left)];
        const Symbol& r = symbols[size_t(right)];
        const int32_t rank = merges.rank(word.substr(l.start, l.len), word.substr(r.start, r.len));
        if (rank < 0) return;
        queue.push({left, right, rank, l.len + r.len});
    };
    for (int i = 1; i < int(symbols.size()); ++i) try_add(i - 1, i);

    while (!queue.empty()) {
        const Bigram b = queue.top();
        queue.pop();
        Symbol& left = symbols[size_t(b.left)];
        Symbol& right = symbols[size_t(b.right)];
        // Symbols only grow rightwards, so an unchanged total length means an unchanged pair.
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
        const std::string_view piece = word.substr(s.start, s.len);
        const int32_t id = vocab.find(piece);
        if (id >= 0) {
            out.push_back(id);
            continue;
        }
        // Not a token (a vocabulary without all 256 byte symbols): emit per character.
        for (size_t k = 0; k < piece.size();) {
            const size_t n = std::min(unicode::utf8_sequence_length(uint8_t(piece[k])), piece.size() - k);
            int32_t char_id = vocab.find(piece.substr(k, n));
            if (char_id < 0) char_id = vocab.unk;
            if (char_id >= 0) out.push_back(char_id);
            k += n;
        }
    }
}

}  // namespace vkllm::tokenizer::detail
