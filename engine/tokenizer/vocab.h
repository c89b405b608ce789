// Internal to the tokenizer library: the vocabulary tables and the two merge algorithms
// (SentencePiece bigram merging, byte-level BPE ranked merging) that work on them.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace vkllm::tokenizer::detail {

// Token attributes as a bit set. The GGUF token type gives one of the first six; llama.cpp-
// compatible fix-ups may add CONTROL (end-of-turn tokens typed NORMAL) or LSTRIP/RSTRIP.
enum TokenAttr : uint16_t {
    kAttrUnknown = 1 << 0,
    kAttrUnused = 1 << 1,
    kAttrNormal = 1 << 2,
    kAttrControl = 1 << 3,
    kAttrUserDefined = 1 << 4,
    kAttrByte = 1 << 5,
    kAttrLstrip = 1 << 6,  // when matched in text, whitespace before it is dropped
    kAttrRstrip = 1 << 7,  // when matched in text, whitespace after it is dropped
};

struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StringMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

struct Vocab {
    std::vector<std::string> text;  // [n_vocab] the vocabulary strings
    std::vector<float> score;       // [n_vocab] SentencePiece merge scores (0 when absent)
    std::vector<uint16_t> attr;     // [n_vocab] TokenAttr bits
    StringMap id_of;                // text -> id (the last id wins for duplicate strings)
    std::array<int32_t, 256> byte_token{};  // the <0xXX> token of each byte, -1 if none
    int32_t unk = -1;

    int32_t n() const { return int32_t(text.size()); }
    int32_t find(std::string_view s) const {
        auto it = id_of.find(s);
        return it == id_of.end() ? -1 : it->second;
    }
};

// SentencePiece BPE as llama.cpp runs it: `text` (spaces already replaced by U+2581) starts as
// one symbol per UTF-8 character; the adjacent pair whose concatenation is the vocabulary token
// with the highest score is merged, repeatedly (ties: leftmost). Symbols that end up not being
// tokens fall back to their bytes' <0xXX> tokens. Appends ids to `out`.
void spm_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out);

// Byte-level BPE merges: `tokenizer.ggml.merges` strings "left right", ranked by position.
class BpeMerges {
public:
    explicit BpeMerges(const std::vector<std::string>& merges);
    int32_t rank(std::string_view left, std::string_view right) const;  // -1 if no such merge
    size_t size() const { return ranks_.size(); }

private:
    StringMap ranks_;  // key: "left right"
};

// Merges one pre-tokenized word, given as the UTF-8 of its GPT-2 byte-level code points: each
// character starts as a symbol; the adjacent pair with the lowest merge rank is merged,
// repeatedly (ties: leftmost). With `ignore_merges`, a word that is itself a token is emitted
// whole. A final piece that is not a token becomes its bytes' <0xXX> tokens with `byte_tokens`
// (merges over raw UTF-8), else its characters' tokens. Appends ids to `out`.
void bpe_encode_word(const Vocab& vocab, const BpeMerges& merges, std::string_view word, bool ignore_merges,
                     bool byte_tokens, std::vector<int32_t>& out);

// BERT's WordPiece (wordpiece.cpp). wordpiece_words: the basic pre-tokenization: optional NFD
// accent stripping (a code point becomes the first of its NFD form, marks are dropped) and
// lower-casing, control characters dropped, whitespace splits, punctuation, ASCII symbols and
// CJK ideographs become one-character words. wordpiece_encode: each word as "\u2581" + word,
// greedy longest match first (continuations carry no prefix); a word with an unmatched part
// becomes unk. Appends ids to `out`.
std::vector<std::string> wordpiece_words(std::string_view text, bool lowercase, bool strip_accents);
void wordpiece_encode(const Vocab& vocab, size_t max_token_len, std::string_view text, bool lowercase,
                      bool strip_accents, std::vector<int32_t>& out);

}  // namespace vkllm::tokenizer::detail
