// Internal: the state behind a Tokenizer, shared by tokenizer_load.cpp (building it from GGUF)
// and tokenizer.cpp (encoding and decoding with it).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unigram.h"
#include "tokenizer/vocab.h"

namespace vkllm::tokenizer {

struct Tokenizer::Impl {
    enum class Model { SentencePiece, ByteLevelBpe, WordPiece, Unigram };
    Model model = Model::SentencePiece;
    std::string model_name;  // `tokenizer.ggml.model`
    std::string pre_name;    // ByteLevelBpe: the `tokenizer.ggml.pre` in use

    detail::Vocab vocab;
    std::unique_ptr<detail::BpeMerges> merges;       // ByteLevelBpe
    std::unique_ptr<PreTokenizer> pre_tokenizer;     // ByteLevelBpe
    bool ignore_merges = false;
    // ByteLevelBpe in SentencePiece style (Gemma 4): spaces as U+2581, merges on raw UTF-8,
    // <0xXX> byte fallback.
    bool spm_style_bpe = false;
    std::unique_ptr<detail::Unigram> unigram;        // Unigram
    // WordPiece (BERT): the normalizer's options and the longest vocabulary string in bytes.
    bool lowercase = true, strip_accents = true;
    size_t max_token_len = 0;

    int32_t bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, pad = -1;
    int32_t sep = -1, mask = -1;  // BERT's [SEP] (ends an encoded text) and [MASK]
    bool add_bos = false, add_eos = false, add_space_prefix = false, add_sep = false;

    // Tokens matched in text before tokenizing (CONTROL, USER_DEFINED, UNKNOWN), longest first.
    std::vector<int32_t> special_tokens;
    std::vector<int32_t> eog;  // sorted

    // What loading fixed up or ignored in the metadata (an out-of-range special-token id, ...),
    // one sentence each, for the front-ends to show.
    std::vector<std::string> warnings;
};

// Builds the state from GGUF metadata (tokenizer_load.cpp).
std::unique_ptr<Tokenizer::Impl> load_tokenizer(const gguf::File& f);

}  // namespace vkllm::tokenizer
