// libFuzzer target: arbitrary bytes through every tokenizer kind the engine has.
//
// Input layout: byte 0 picks the vocabulary (see kVocabs) and the flags, the rest is the text.
// The vocabularies are small GGUF images written at start-up by the GGUF writer (no files
// needed): a SentencePiece one with byte fallback, byte-level BPE ones (all 256 byte symbols,
// a few merges) under one pre-tokenizer of each regex family, and a WordPiece one.
//
// Checked for every input:
//   - encode() either succeeds or throws TokenizerError (no other exception, no crash);
//   - every id is in [0, n_vocab), and add_special adds exactly the promised BOS/EOS/SEP;
//   - token_to_piece() and decode() never throw on those ids (with and without render_special);
//   - the UTF-8 stream decoder gives back exactly the concatenated pieces;
//   - round trip decode(encode(text)) == text where the tokenizer promises it: byte-level BPE
//     and SentencePiece on valid UTF-8 without parse_special (SentencePiece: no U+2581 in the
//     text, since that is its space symbol, and no special token in the result, since
//     llama.cpp's rule adds a space after each one).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

using vkllm::gguf::Value;
using vkllm::gguf::Writer;
using vkllm::tokenizer::Tokenizer;
using vkllm::tokenizer::TokenizerError;

namespace {

[[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "fuzz_tokenizer: invariant broken: %s\n", what.c_str());
    std::abort();
}

const char* kHex = "0123456789ABCDEF";

// SentencePiece: <unk> <s> </s>, 256 byte tokens, pieces with scores, a control and a
// user-defined token.
Writer spm_vocab() {
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<int32_t> types = {2, 3, 3};
    std::vector<float> scores = {0, 0, 0};
    for (int b = 0; b < 256; ++b) {
        tokens.push_back(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">");
        types.push_back(6);
        scores.push_back(0);
    }
    const char* pieces[] = {"\xE2\x96\x81", "a", "b", "c", "e", "h", "t", "ab", "bc", "th", "he", "the",
                            "\xE2\x96\x81" "t", "\xE2\x96\x81" "the", "\xE2\x96\x81" "a", "\xC3\xA9", "\xE4\xB8\xAD"};
    float score = -1;
    for (const char* p : pieces) {
        tokens.push_back(p);
        types.push_back(1);
        scores.push_back(score -= 0.25f);
    }
    tokens.push_back("<|im_start|>");
    types.push_back(3);
    scores.push_back(0);
    tokens.push_back("<tool>");
    types.push_back(4);
    scores.push_back(0);
    Writer w;
    w.set("tokenizer.ggml.model", Value::from_string("llama"));
    w.set("tokenizer.ggml.tokens", Value::from_strings(tokens));
    w.set("tokenizer.ggml.scores", Value::from_f32s(scores));
    w.set("tokenizer.ggml.token_type", Value::from_i32s(types));
    w.set("tokenizer.ggml.add_eos_token", Value::from_bool(true));
    return w;
}

// The 256 byte symbols of byte-level BPE (GPT-2's reversible map, as the engine has it).
std::vector<std::string> byte_symbols() {
    std::vector<std::string> symbols;
    for (int b = 0; b < 256; ++b) {
        std::string s;
        vkllm::tokenizer::unicode::append_utf8(s, vkllm::tokenizer::unicode::byte_to_code_point(uint8_t(b)));
        symbols.push_back(s);
    }
    return symbols;
}

Writer bpe_vocab(const char* pre) {
    std::vector<std::string> tokens = byte_symbols();
    std::vector<int32_t> types(tokens.size(), 1);
    const std::string sp = tokens[' '];
    const std::vector<std::pair<std::string, std::string>> merges = {
        {"t", "h"}, {"h", "e"}, {"th", "e"}, {sp, "t"}, {sp, "the"}, {"i", "n"}, {"e", "r"},
        {sp, "a"}, {"1", "2"}, {"\xC3\xA4", "\xC2\xB8"}, {sp, sp}};
    std::vector<std::string> merge_lines;
    for (const auto& [a, b] : merges) {
        merge_lines.push_back(a + " " + b);
        tokens.push_back(a + b);
        types.push_back(1);
    }
    for (const char* special : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
        tokens.push_back(special);
        types.push_back(3);
    }
    tokens.push_back("<tool>");
    types.push_back(4);
    Writer w;
    w.set("tokenizer.ggml.model", Value::from_string("gpt2"));
    w.set("tokenizer.ggml.pre", Value::from_string(pre));
    w.set("tokenizer.ggml.tokens", Value::from_strings(tokens));
    w.set("tokenizer.ggml.token_type", Value::from_i32s(types));
    w.set("tokenizer.ggml.merges", Value::from_strings(merge_lines));
    w.set("tokenizer.ggml.bos_token_id", Value::from_u32(uint32_t(tokens.size() - 4)));
    w.set("tokenizer.ggml.eos_token_id", Value::from_u32(uint32_t(tokens.size() - 2)));
    return w;
}

// WordPiece with BERT's special ids at 0 and 100..103.
Writer wordpiece_vocab() {
    std::vector<std::string> tokens = {"[PAD]"};
    for (int i = 1; i < 100; ++i) tokens.push_back("[unused" + std::to_string(i) + "]");
    for (const char* s : {"[UNK]", "[CLS]", "[SEP]", "[MASK]"}) tokens.push_back(s);
    for (char c = 'a'; c <= 'z'; ++c) {
        tokens.push_back(std::string(1, c));
        tokens.push_back(std::string("##") + c);
    }
    for (const char* s : {"the", "##ing", "hello", "world", "!", ",", ".", "'", "0", "1", "##1", "\xE4\xB8\xAD"})
        tokens.push_back(s);
    std::vector<int32_t> types(tokens.size(), 1);
    for (int id : {0, 101, 102, 103}) types[size_t(id)] = 3;
    types[100] = 2;  // [UNK]
    Writer w;
    w.set("tokenizer.ggml.model", Value::from_string("bert"));
    w.set("tokenizer.ggml.tokens", Value::from_strings(tokens));
    w.set("tokenizer.ggml.token_type", Value::from_i32s(types));
    return w;
}

// One pre-tokenizer name from each regex family in tokenizer/pretokenizer.cpp.
const char* kPreTokenizers[] = {"default", "llama3", "dbrx", "gpt-2", "qwen2", "qwen35", "gpt-4o", "tekken",
                                "deepseek-llm", "deepseek-coder", "deepseek-v3", "falcon", "starcoder",
                                "bloom", "viking"};

std::vector<std::unique_ptr<Tokenizer>>& tokenizers() {
    static std::vector<std::unique_ptr<Tokenizer>> all = [] {
        std::vector<Writer> writers;
        writers.push_back(spm_vocab());
        writers.push_back(wordpiece_vocab());
        for (const char* pre : kPreTokenizers) writers.push_back(bpe_vocab(pre));
        std::vector<std::unique_ptr<Tokenizer>> out;
        for (Writer& w : writers) {
            const std::vector<uint8_t> bytes = w.to_bytes();
            const auto file = vkllm::gguf::File::from_memory(bytes.data(), bytes.size(), "fuzz-vocab.gguf");
            out.push_back(Tokenizer::from_gguf(*file));
        }
        return out;
    }();
    return all;
}

bool valid_utf8(const std::string& s) {
    size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
        for (size_t k = 1; k < n; ++k) {
            const auto d = static_cast<unsigned char>(s[i + k]);
            if ((d >> 6) != 2) return false;
            cp = (cp << 6) | (d & 0x3F);
        }
        const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += n;
    }
    return true;
}

void check(const Tokenizer& tok, bool is_spm, bool is_bpe, const std::string& text, bool add_special,
           bool parse_special) {
    std::vector<int32_t> ids;
    try {
        ids = tok.encode(text, add_special, parse_special);
    } catch (const TokenizerError&) {
        return;  // a clean, named error
    }
    const int32_t n_vocab = tok.n_vocab();
    for (int32_t id : ids)
        if (id < 0 || id >= n_vocab) fail(tok.kind() + ": id " + std::to_string(id) + " out of range");
    if (add_special && tok.add_bos() && (ids.empty() || ids.front() != tok.bos()))
        fail(tok.kind() + ": add_special without the BOS in front");
    if (add_special && tok.add_sep() && (ids.empty() || ids.back() != tok.sep()))
        fail(tok.kind() + ": add_special without the SEP at the end");
    if (add_special && tok.add_eos() && (ids.empty() || ids.back() != tok.eos()))
        fail(tok.kind() + ": add_special without the EOS at the end");
    if (!add_special && !parse_special)
        for (int32_t id : ids)
            if (tok.is_control(id) && id != tok.unk()) fail(tok.kind() + ": control token from plain text");

    std::string joined;
    vkllm::Utf8Decoder stream;
    std::string streamed;
    for (int32_t id : ids) {
        const std::string piece = tok.token_to_piece(id);
        tok.token_to_piece(id, /*render_special=*/true);
        joined += piece;
        streamed += stream.push(piece);
    }
    streamed += stream.flush();
    if (streamed != joined) fail(tok.kind() + ": the UTF-8 stream changed the text");
    const std::string decoded = tok.decode(ids);
    tok.decode(ids, /*render_special=*/true);

    // SentencePiece puts a space in front of the text after each special token (as llama.cpp
    // does), which decode() does not take out again: no round trip through special tokens.
    bool spm_plain = text.find("\xE2\x96\x81") == std::string::npos;
    for (int32_t id : ids) {
        const auto type = tok.token_type(id);
        spm_plain = spm_plain && (type == vkllm::tokenizer::TokenType::Normal || type == vkllm::tokenizer::TokenType::Byte);
    }
    const bool promised = (is_bpe || (is_spm && spm_plain)) && !parse_special && valid_utf8(text);
    if (promised && decoded != text) {
        std::string ids_text;
        for (int32_t id : ids) ids_text += " " + std::to_string(id);
        fail(tok.kind() + ": decode(encode(text)) != text; ids:" + ids_text + "; decoded " +
             std::to_string(decoded.size()) + " bytes, text " + std::to_string(text.size()));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    auto& all = tokenizers();
    const uint8_t selector = data[0];
    const size_t which = (selector >> 2) % all.size();
    const bool add_special = selector & 1;
    const bool parse_special = selector & 2;
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    check(*all[which], which == 0, which >= 2, text, add_special, parse_special);

    // Every id decodes, alone and in a short run.
    if (size >= 3) {
        const Tokenizer& tok = *all[which];
        std::vector<int32_t> ids;
        for (size_t i = 1; i + 1 < size && ids.size() < 64; i += 2)
            ids.push_back(int32_t((data[i] | (data[i + 1] << 8)) % uint32_t(tok.n_vocab())));
        tok.decode(ids);
        tok.decode(ids, /*render_special=*/true);
    }
    return 0;
}
