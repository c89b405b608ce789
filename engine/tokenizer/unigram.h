// SentencePiece's Unigram model (`tokenizer.ggml.model` "t5": T5, XLM-RoBERTa, nomic-bert-moe):
// the text is normalized (the precompiled character map, whitespace escaped as U+2581, a space
// put in front, runs of spaces merged when the file asks), then cut by Viterbi search into the
// vocabulary pieces whose log-probability scores sum highest (Kudo 2018, "Subword
// Regularization"; SentencePiece's unigram_model.cc). As llama.cpp runs it, so both engines
// give the same ids.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace vkllm::tokenizer::detail {

// Longest-prefix and all-prefix matching against a set of vocabulary strings: their ids sorted
// by text, so the strings sharing a prefix are one contiguous range that each further byte
// narrows by binary search (a trie without the nodes).
class PrefixSet {
public:
    PrefixSet() = default;
    PrefixSet(const Vocab& vocab, std::vector<int32_t> ids);
    bool empty() const { return ids_.empty(); }

    // Calls match(id, length) for every string of the set that `text` starts with, shortest first.
    template <class Match>
    void for_each_prefix(std::string_view text, Match match) const;
    // Length in bytes of the longest start of `text` that some string of the set starts with.
    size_t longest_common_prefix(std::string_view text) const;

private:
    const Vocab* vocab_ = nullptr;
    std::vector<int32_t> ids_;  // sorted by text; of equal texts only the highest id is kept
};

// The precompiled character map of a SentencePiece normalizer (`tokenizer.ggml.precompiled_charsmap`):
// a uint32 byte count, a XOR-compressed compact double array (Kanda 2018, "Space- and
// Time-Efficient String Dictionaries") of input prefixes, then the NUL-terminated replacement
// strings its leaves point to.
class CharsMap {
public:
    CharsMap() = default;
    explicit CharsMap(std::vector<uint8_t> blob);  // throws std::runtime_error when malformed
    bool empty() const { return nodes_ == 0; }
    // The longest input prefix of `text` the map knows: its length in bytes (0 when none) and
    // its replacement.
    std::pair<size_t, std::string_view> match(std::string_view text) const;

private:
    uint32_t node(size_t i) const;
    std::vector<uint8_t> blob_;
    size_t nodes_ = 0;           // uint32 entries of the double array
    size_t replacements_ = 0;    // byte offset of the replacement strings in blob_
};

class Unigram {
public:
    Unigram(const Vocab& vocab, CharsMap charsmap, bool add_space_prefix, bool remove_extra_whitespaces);
    // Normalizes one raw text fragment and appends its best tokenization to `out`.
    void encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) const;
    // The normalized text, U+2581 for spaces (for tests).
    std::string normalize(std::string_view text) const;

private:
    CharsMap charsmap_;
    bool add_space_prefix_, remove_extra_whitespaces_;
    PrefixSet pieces_;        // NORMAL, USER_DEFINED and UNUSED tokens: the Viterbi candidates
    PrefixSet user_defined_;  // kept whole by the normalizer
    double unknown_score_;    // the lowest NORMAL score minus 10: an unknown character's cost
};

}  // namespace vkllm::tokenizer::detail
