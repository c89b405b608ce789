// Text <-> token ids for the vocabularies GGUF files carry (`tokenizer.ggml.*`):
//   - "llama": SentencePiece BPE with byte fallback (Llama 1/2, Mistral, Gemma, Phi-3, ...);
//   - "gpt2":  byte-level BPE with a regex pre-tokenizer chosen by `tokenizer.ggml.pre`
//              (GPT-2, Llama 3, Qwen2/3, DeepSeek, OLMo, gpt-oss, ...);
//   - "gemma4": BPE in SentencePiece style (U+2581 for spaces, merges on raw UTF-8, <0xXX>
//              byte fallback; Gemma 4);
//   - "bert":  WordPiece with BERT's basic pre-tokenization ([CLS] text [SEP]);
//   - "t5":    SentencePiece Unigram (Viterbi over piece scores after the precompiled
//              normalizer; T5, XLM-RoBERTa, nomic-bert-moe).
// Any other `tokenizer.ggml.model` (rwkv, plamo2, ...) is refused with this list.
// Results match llama.cpp's tokenizer token for token (its vocab test files are the tests).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf.h"
#include "vkllm/utf8.h"

namespace vkllm::tokenizer {

// An unsupported or inconsistent tokenizer in a model file. The message names what and where.
struct TokenizerError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// `tokenizer.ggml.token_type` values.
enum class TokenType : int32_t {
    Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6,
};

class Tokenizer {
public:
    // Reads the vocabulary from GGUF metadata. Throws TokenizerError naming an unsupported
    // `tokenizer.ggml.model` or `tokenizer.ggml.pre`, or missing/inconsistent arrays.
    static std::unique_ptr<Tokenizer> from_gguf(const gguf::File& f);
    ~Tokenizer();
    Tokenizer(const Tokenizer&) = delete;
    Tokenizer& operator=(const Tokenizer&) = delete;

    // add_special: BOS/EOS as the vocabulary asks (add_bos(), add_eos()).
    // parse_special: text of CONTROL tokens ("<|im_start|>", "<s>") becomes their ids;
    // otherwise it is tokenized as plain text. USER_DEFINED tokens are always matched whole,
    // as in Hugging Face tokenizers and llama.cpp.
    std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

    // The bytes one token contributes to the text; may be part of a UTF-8 character (byte
    // tokens). CONTROL/UNKNOWN tokens give "" unless render_special (then their text).
    std::string token_to_piece(int32_t id, bool render_special = false) const;
    // The pieces concatenated. For SentencePiece vocabularies with add_space_prefix, the space
    // that encode() put in front of the text is removed from the first piece that is not empty
    // (so decode(encode(x, true, false)) == x: BOS renders as nothing).
    std::string decode(const std::vector<int32_t>& ids, bool render_special = false) const;

    int32_t n_vocab() const;
    int32_t bos() const;  // -1 when the vocabulary has none
    int32_t eos() const;
    int32_t eot() const;  // end of turn ("<|eot_id|>", "<|im_end|>", ...), -1 when none
    int32_t eom() const;  // end of message ("<|eom_id|>"), -1 when none
    int32_t unk() const;
    int32_t pad() const;
    int32_t sep() const;   // BERT's [SEP], -1 when none
    int32_t mask() const;  // BERT's [MASK], -1 when none
    bool add_sep() const;  // encode(..., add_special=true) ends with sep() (WordPiece)
    bool add_bos() const;  // encode(..., add_special=true) starts with bos()
    bool add_eos() const;
    bool add_space_prefix() const;
    bool is_eog(int32_t id) const;  // ends generation: eos, eot, eom and their relatives
    const std::vector<int32_t>& eog_ids() const;  // sorted

    const std::string& token_text(int32_t id) const;  // the raw vocabulary string
    TokenType token_type(int32_t id) const;
    bool is_control(int32_t id) const;             // renders as nothing in decode()
    int32_t find_token(std::string_view text) const;  // id of a vocabulary string, -1 if none

    // "llama (SentencePiece)" or "gpt2 (byte-level BPE, pre=qwen2)".
    std::string kind() const;

    // Load-time warnings: metadata that was ignored or replaced by a default (an out-of-range
    // BOS/EOS id, ...), one sentence each, naming the key and the value. Empty for a clean file.
    const std::vector<std::string>& warnings() const;

    struct Impl;

private:
    explicit Tokenizer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// The public UTF-8 stream decoder (vkllm/utf8.h), implemented here.
using Utf8Stream = vkllm::Utf8Decoder;

}  // namespace vkllm::tokenizer
