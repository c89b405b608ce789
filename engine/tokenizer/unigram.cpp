// SentencePiece Unigram: normalization by the precompiled character map, then Viterbi search.
#include "tokenizer/unigram.h"

#include <algorithm>
#include <cfloat>
#include <cstring>
#include <stdexcept>

#include "tokenizer/unicode.h"

namespace vkllm::tokenizer::detail {

namespace {

constexpr std::string_view kEscapedSpace = "\xE2\x96\x81";  // U+2581

// The byte length of a valid UTF-8 sequence at the start of `s`, 0 when it is not one (a stray
// continuation byte, a lead byte whose continuation bytes are missing).
size_t valid_utf8_length(std::string_view s) {
    const uint8_t lead = uint8_t(s[0]);
    size_t n = 0;
    if (lead < 0x80) return 1;
    if ((lead & 0xE0) == 0xC0) n = 2;
    else if ((lead & 0xF0) == 0xE0) n = 3;
    else if ((lead & 0xF8) == 0xF0) n = 4;
    else return 0;
    if (s.size() < n) return 0;
    for (size_t k = 1; k < n; ++k)
        if ((uint8_t(s[k]) & 0xC0) != 0x80) return 0;
    return n;
}

}  // namespace

// ---- PrefixSet ----

PrefixSet::PrefixSet(const Vocab& vocab, std::vector<int32_t> ids) : vocab_(&vocab), ids_(std::move(ids)) {
    std::sort(ids_.begin(), ids_.end(), [&](int32_t a, int32_t b) {
        const int c = vocab.text[size_t(a)].compare(vocab.text[size_t(b)]);
        return c < 0 || (c == 0 && a > b);
    });
    ids_.erase(std::unique(ids_.begin(), ids_.end(),
                           [&](int32_t a, int32_t b) { return vocab.text[size_t(a)] == vocab.text[size_t(b)]; }),
               ids_.end());
}

// The range [lo, hi) of strings that share the first `depth` bytes of the text is narrowed to
// those whose next byte is `c`. std::string orders bytes as unsigned char, as here.
template <class Match>
void PrefixSet::for_each_prefix(std::string_view text, Match match) const {
    size_t lo = 0, hi = ids_.size();
    for (size_t depth = 0; depth < text.size() && lo < hi; ++depth) {
        const auto& str = [&](size_t i) -> const std::string& { return vocab_->text[size_t(ids_[i])]; };
        if (str(lo).size() == depth) ++lo;  // the prefix itself sorts first
        const uint8_t c = uint8_t(text[depth]);
        const auto first = ids_.begin() + std::ptrdiff_t(lo), last = ids_.begin() + std::ptrdiff_t(hi);
        const auto byte_at = [&](int32_t id) { return uint8_t(vocab_->text[size_t(id)][depth]); };
        const auto from = std::partition_point(first, last, [&](int32_t id) { return byte_at(id) < c; });
        const auto to = std::partition_point(from, last, [&](int32_t id) { return byte_at(id) == c; });
        lo = size_t(from - ids_.begin());
        hi = size_t(to - ids_.begin());
        if (lo < hi && str(lo).size() == depth + 1) match(ids_[lo], depth + 1);
    }
}

size_t PrefixSet::longest_common_prefix(std::string_view text) const {
    size_t lo = 0, hi = ids_.size(), depth = 0;
    for (; depth < text.size() && lo < hi; ++depth) {
        if (vocab_->text[size_t(ids_[lo])].size() == depth) ++lo;
        const uint8_t c = uint8_t(text[depth]);
        const auto first = ids_.begin() + std::ptrdiff_t(lo), last = ids_.begin() + std::ptrdiff_t(hi);
        const auto byte_at = [&](int32_t id) { return uint8_t(vocab_->text[size_t(id)][depth]); };
        const auto from = std::partition_point(first, last, [&](int32_t id) { return byte_at(id) < c; });
        const auto to = std::partition_point(from, last, [&](int32_t id) { return byte_at(id) == c; });
        if (from == to) break;
        lo = size_t(from - ids_.begin());
        hi = size_t(to - ids_.begin());
    }
    return depth;
}

// ---- CharsMap ----

CharsMap::CharsMap(std::vector<uint8_t> blob) : blob_(std::move(blob)) {
    if (blob_.empty()) return;
    if (blob_.size() < 4) throw std::runtime_error("precompiled_charsmap is shorter than its 4-byte header");
    uint32_t array_bytes = 0;
    std::memcpy(&array_bytes, blob_.data(), 4);
    if (size_t(array_bytes) + 4 >= blob_.size())
        throw std::runtime_error("precompiled_charsmap: its double array of " + std::to_string(array_bytes) +
                                 " bytes does not fit in the " + std::to_string(blob_.size()) + "-byte map");
    nodes_ = array_bytes / 4;
    replacements_ = 4 + size_t(array_bytes);
}

uint32_t CharsMap::node(size_t i) const {
    if (i >= nodes_) throw std::runtime_error("precompiled_charsmap: a node index is outside its double array");
    uint32_t v;
    std::memcpy(&v, blob_.data() + 4 + 4 * i, 4);
    return v;
}

// Each 32-bit node: BASE in bits 10-30 (shifted left by 8 when bit 9 is set), the LEAF flag in
// bit 8, LCHECK (the byte that leads to the node) in bits 0-7 (bit 31 marks value nodes, which
// hold a replacement's offset in bits 0-30).
std::pair<size_t, std::string_view> CharsMap::match(std::string_view text) const {
    if (nodes_ == 0) return {0, {}};
    auto base = [](uint32_t n) { return (n >> 10) << ((n & (1u << 9)) >> 6); };
    size_t length = 0, offset = 0;
    uint32_t index = base(node(0));
    for (size_t k = 0; k < text.size(); ++k) {
        const uint8_t c = uint8_t(text[k]);
        if (c == 0) break;
        index ^= c;
        const uint32_t n = node(index);
        if ((n & ((1u << 31) | 0xFFu)) != c) break;
        const bool leaf = (n >> 8) & 1;
        index ^= base(n);
        if (leaf) {
            length = k + 1;
            offset = node(index) & ((1u << 31) - 1);
        }
    }
    if (length == 0) return {0, {}};
    const size_t n_replacements = blob_.size() - replacements_;
    if (offset >= n_replacements) throw std::runtime_error("precompiled_charsmap: a replacement offset is outside the map");
    const char* s = reinterpret_cast<const char*>(blob_.data() + replacements_ + offset);
    const size_t len = strnlen(s, n_replacements - offset);
    if (len == n_replacements - offset) throw std::runtime_error("precompiled_charsmap: a replacement is not terminated");
    return {length, std::string_view(s, len)};
}

// ---- Unigram ----

Unigram::Unigram(const Vocab& vocab, CharsMap charsmap, bool add_space_prefix, bool remove_extra_whitespaces)
    : charsmap_(std::move(charsmap)),
      add_space_prefix_(add_space_prefix),
      remove_extra_whitespaces_(remove_extra_whitespaces) {
    std::vector<int32_t> pieces, user_defined;
    float min_score = FLT_MAX;
    for (int32_t id = 0; id < vocab.n(); ++id) {
        const uint16_t a = vocab.attr[size_t(id)];
        if (a & kAttrNormal) min_score = std::min(min_score, vocab.score[size_t(id)]);
        if (a & (kAttrNormal | kAttrUserDefined | kAttrUnused)) pieces.push_back(id);
        if (a & kAttrUserDefined) user_defined.push_back(id);
    }
    pieces_ = PrefixSet(vocab, std::move(pieces));
    user_defined_ = PrefixSet(vocab, std::move(user_defined));
    unknown_score_ = double(min_score - 10.0f);  // SentencePiece's kUnkPenalty, in float as llama.cpp
}

std::string Unigram::normalize(std::string_view text) const {
    std::string out;
    out.reserve(text.size() * 3);
    bool space_prepended = false, in_word = false;
    for (size_t offset = 0; offset < text.size();) {
        const std::string_view rest = text.substr(offset);
        // A user-defined token's text is kept as it is. (As llama.cpp's trie walk, this takes the
        // longest prefix shared with any user-defined token, whole token or not.)
        std::string_view piece;
        size_t consumed = user_defined_.empty() ? 0 : user_defined_.longest_common_prefix(rest);
        if (consumed > 0) {
            piece = rest.substr(0, consumed);
        } else if (const auto [n, replacement] = charsmap_.match(rest); n > 0) {
            piece = replacement;
            consumed = n;
        } else if (const size_t n_utf8 = valid_utf8_length(rest); n_utf8 > 0) {
            piece = rest.substr(0, n_utf8);
            consumed = n_utf8;
        } else {
            piece = "\xEF\xBF\xBD";  // U+FFFD for a byte that does not start a valid character
            consumed = 1;
        }
        for (char c : piece) {
            if (c != ' ') {
                if (!in_word) {
                    in_word = true;
                    if ((add_space_prefix_ && !space_prepended) || remove_extra_whitespaces_) {
                        out.append(kEscapedSpace);
                        space_prepended = true;
                    }
                }
                out.push_back(c);
            } else {
                in_word = false;
                if (!remove_extra_whitespaces_) out.append(kEscapedSpace);
            }
        }
        offset += consumed;
    }
    return out;
}

void Unigram::encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) const {
    const std::string normalized = normalize(text);
    const size_t n = normalized.size();
    if (n == 0) return;

    // best[i]: the highest-scoring tokenization of normalized[0, i): its last token and where
    // that token starts.
    struct Best {
        int32_t id;
        size_t from;
        double score;
    };
    std::vector<Best> best(n + 1, Best{vocab.unk, 0, -DBL_MAX});
    best[0] = Best{vocab.unk, 0, 0.0};
    for (size_t offset = 0; offset < n;) {
        const size_t char_len = std::min(unicode::utf8_sequence_length(uint8_t(normalized[offset])), n - offset);
        const double score_here = best[offset].score;
        bool whole_character = false;
        pieces_.for_each_prefix(std::string_view(normalized).substr(offset), [&](int32_t id, size_t len) {
            if (len == char_len) whole_character = true;
            // User-defined tokens score 0: above every piece (scores are log-probabilities).
            const double s = score_here + ((vocab.attr[size_t(id)] & kAttrUserDefined) ? 0.0 : double(vocab.score[size_t(id)]));
            Best& b = best[offset + len];
            if (s > b.score) b = Best{id, offset, s};
        });
        if (!whole_character) {  // no piece is this character: it is unknown, at a penalty
            const double s = score_here + unknown_score_;
            Best& b = best[offset + char_len];
            if (s > b.score) b = Best{vocab.unk, offset, s};
        }
        offset += char_len;
    }

    // Back from the end; a run of unknown characters becomes one unknown token.
    const size_t start = out.size();
    bool previous_unknown = false;
    for (size_t at = n;;) {
        const Best& b = best[at];
        const bool unknown = b.id == vocab.unk;
        if (!(previous_unknown && unknown) && b.id >= 0) out.push_back(b.id);
        if (b.from == 0) break;
        previous_unknown = unknown;
        at = b.from;
    }
    std::reverse(out.begin() + std::ptrdiff_t(start), out.end());
}

}  // namespace vkllm::tokenizer::detail
