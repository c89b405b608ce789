// Byte-level BPE merging of one pre-tokenized word (GPT-2's algorithm, run with a priority
// queue of adjacent pairs as llama.cpp does).
#include <algorithm>

#include "tokenizer/merge.h"
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

void bpe_encode_word(const Vocab& vocab, const BpeMerges& merges, std::string_view word, bool ignore_merges,
                     bool byte_tokens, std::vector<int32_t>& out) {
    if (word.empty()) return;
    if (ignore_merges) {
        const int32_t id = vocab.find(word);
        if (id >= 0) {
            out.push_back(id);
            return;
        }
    }

    std::vector<Symbol> symbols = split_characters(word);

    // Lowest merge rank first.
    merge_symbols(symbols, [&](const Symbol& l, const Symbol& r) -> std::optional<double> {
        const int32_t rank = merges.rank(word.substr(l.start, l.len), word.substr(r.start, r.len));
        if (rank < 0) return std::nullopt;
        return -double(rank);
    });

    for (int i = 0; i != -1; i = symbols[size_t(i)].next) {
        const Symbol& s = symbols[size_t(i)];
        const std::string_view piece = word.substr(s.start, s.len);
        const int32_t id = vocab.find(piece);
        if (id >= 0) {
            out.push_back(id);
            continue;
        }
        if (byte_tokens) {  // raw UTF-8 merges: the piece's bytes as <0xXX> tokens
            for (char c : piece)
                if (const int32_t byte_id = vocab.byte_token[uint8_t(c)]; byte_id >= 0) out.push_back(byte_id);
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
