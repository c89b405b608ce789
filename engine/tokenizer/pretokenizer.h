// Pre-tokenization for byte-level BPE vocabularies: text is cut into words by a list of regex
// split patterns before merges run inside each word. Which list applies is named by the GGUF
// key `tokenizer.ggml.pre`; every supported name is one entry of the table in pretokenizer.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/regex.h"

namespace vkllm::tokenizer {

struct PreTokenizerSpec {
    std::vector<std::string_view> names;     // `tokenizer.ggml.pre` values that select this entry
    std::vector<std::string_view> patterns;  // applied in order (see PreTokenizer::split)
    bool ignore_merges = false;  // a word that is itself a token is emitted whole, without merging
    bool add_bos = false;        // default for `tokenizer.ggml.add_bos_token`
    // SentencePiece-style BPE (Gemma 4): spaces become U+2581 before splitting, merges run on
    // the raw UTF-8 (no GPT-2 byte symbols), pieces that are not tokens fall back to <0xXX>
    // byte tokens, and BOS is added whatever the file says (as llama.cpp does).
    bool spm_style = false;
};

// nullptr when no entry has that name.
const PreTokenizerSpec* find_pre_tokenizer(std::string_view name);
// Every supported name, comma-separated, for error messages.
std::string supported_pre_tokenizer_names();

class PreTokenizer {
public:
    explicit PreTokenizer(const PreTokenizerSpec& spec);

    // Cuts text (code points) into words, returned as consecutive [begin, end) ranges that cover
    // it. Each pattern runs over each piece left by the previous ones, as if the piece were the
    // whole text; a match becomes a piece, and so does each run of text between matches.
    std::vector<std::pair<size_t, size_t>> split(const std::vector<uint32_t>& cps) const;

private:
    std::vector<Regex> regexes_;
};

}  // namespace vkllm::tokenizer
