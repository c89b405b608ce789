// BERT's WordPiece as llama.cpp runs it (its WPM tokenizer). Files converted by llama.cpp store
// a word-initial piece as "\u2581piece" and a continuation ("##piece" in Hugging Face's
// vocab.txt) as plain "piece", so a word is matched as "\u2581" + word, greedily, longest
// vocabulary string first.
#include <algorithm>

#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace vkllm::tokenizer::detail {

namespace {

constexpr std::string_view kWordStart = "\xE2\x96\x81";  // U+2581

// CJK ideographs become words of their own (the ranges of BERT's _is_chinese_char, with
// Hugging Face's 0x2B920 for the extension E/F start, as llama.cpp has it).
bool is_cjk(uint32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool is_control(unicode::Category c) {
    using unicode::Category;
    return c == Category::Cc || c == Category::Cf || c == Category::Co || c == Category::Cs;
}

// One word of `word` with "\u2581" in front: longest vocabulary match at each byte, left to
// right. If some position matches nothing, the whole word becomes [UNK].
void encode_word(const Vocab& vocab, size_t max_token_len, const std::string& word, std::vector<int32_t>& out) {
    const std::string text = std::string(kWordStart) + word;
    const size_t n = text.size();
    const size_t first = out.size();
    for (size_t i = 0; i < n;) {
        bool matched = false;
        for (size_t j = std::min(n, i + max_token_len + 1); j > i; --j) {
            const int32_t id = vocab.find(std::string_view(text).substr(i, j - i));
            if (id >= 0) {
                out.push_back(id);
                i = j;
                matched = true;
                break;
            }
        }
        if (!matched) {
            out.resize(first);
            break;
        }
    }
    if (out.size() == first && vocab.unk >= 0) out.push_back(vocab.unk);
}

}  // namespace

std::vector<std::string> wordpiece_words(std::string_view text, bool lowercase, bool strip_accents) {
    std::vector<std::string> words(1);
    auto end_word = [&] {
        if (!words.back().empty()) words.emplace_back();
    };
    for (uint32_t cp : unicode::decode_utf8(text)) {
        if (strip_accents) cp = unicode::nfd_first(cp);  // "é" -> "e" (its mark is dropped below)
        if (unicode::is_white_space(cp)) {
            end_word();
            continue;
        }
        const unicode::Category cat = unicode::category(cp);
        if (cp == 0 || cp == unicode::kReplacementChar || is_control(cat)) continue;
        const char major = unicode::major_class(cat);
        if (strip_accents && major == 'M') continue;
        if (lowercase) cp = unicode::to_lower(cp);
        if (major == 'P' || (cp < 0x7F && major == 'S') || is_cjk(cp)) {
            // Punctuation, ASCII symbols and CJK ideographs are words of one character.
            end_word();
            unicode::append_utf8(words.back(), cp);
            words.emplace_back();
        } else {
            unicode::append_utf8(words.back(), cp);
        }
    }
    if (words.back().empty()) words.pop_back();
    return words;
}

void wordpiece_encode(const Vocab& vocab, size_t max_token_len, std::string_view text, bool lowercase,
                      bool strip_accents, std::vector<int32_t>& out) {
    for (const std::string& word : wordpiece_words(text, lowercase, strip_accents))
        encode_word(vocab, max_token_len, word, out);
}

}  // namespace vkllm::tokenizer::detail
