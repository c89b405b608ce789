// SentencePiece-style merging (llama.cpp's SPM tokenizer, from llama.cpp commit 074bea2e).
#include <algorithm>

#include "tokenizer/merge.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace vkllm::tokenizer::detail {

void spm_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) {
    std::vector<Symbol> symbols = split_characters(text);
    if (symbols.empty()) return;

    // Highest vocabulary score of the merged piece first.
    merge_symbols(symbols, [&](const Symbol& l, const Symbol& r) -> std::optional<double> {
        const int32_t id = vocab.find(text.substr(l.start, l.len + r.len));
        if (id < 0) return std::nullopt;
        return double(vocab.score[size_t(id)]);
    });

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
