// Encoding (special-token partition, then SentencePiece or pre-tokenizer + BPE per fragment)
// and decoding (token pieces).
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <cctype>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

namespace vkllm::tokenizer {

namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

// A piece of the input: either a special token, or a byte range of raw text.
struct Fragment {
    int32_t token = -1;  // >= 0: a special token
    size_t offset = 0;
    size_t length = 0;
};

bool is_space_byte(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// Cuts special tokens out of the text, longest tokens first, each over every raw fragment
// left by the longer ones (llama.cpp's tokenizer_st_partition). CONTROL and UNKNOWN tokens
// only count when parse_special; USER_DEFINED ones always do.
std::vector<Fragment> partition(const Tokenizer::Impl& t, std::string_view text, bool parse_special) {
    std::vector<Fragment> fragments;
    if (text.empty()) return fragments;
    fragments.push_back({-1, 0, text.size()});
    std::vector<Fragment> next;
    for (int32_t id : t.special_tokens) {
        const uint16_t attr = t.vocab.attr[size_t(id)];
        if (!parse_special && (attr & (detail::kAttrControl | detail::kAttrUnknown))) continue;
        const std::string& special = t.vocab.text[size_t(id)];
        if (text.find(special) == std::string_view::npos) continue;

        next.clear();
        for (const Fragment& f : fragments) {
            if (f.token >= 0) {
                next.push_back(f);
                continue;
            }
            const size_t end = f.offset + f.length;
            const std::string_view window = text.substr(0, end);
            size_t pos = f.offset;
            for (;;) {
                const size_t match = window.find(special, pos);
                if (match == std::string_view::npos) break;
                size_t left_end = match;
                if (attr & detail::kAttrLstrip)
                    while (left_end > pos && is_space_byte(text[left_end - 1])) --left_end;
                if (left_end > pos) next.push_back({-1, pos, left_end - pos});
                next.push_back({id, 0, 0});
                pos = match + special.size();
                if (attr & detail::kAttrRstrip)
                    while (pos < end && is_space_byte(text[pos])) ++pos;
            }
            if (pos < end) next.push_back({-1, pos, end - pos});
        }
        fragments.swap(next);
    }
    return fragments;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
    std::string out;
    out.reserve(s.size());
    size_t pos = 0;
    for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
        out.append(s, pos, hit - pos);
        out.append(to);
    }
    out.append(s, pos, std::string::npos);
    s.swap(out);
}

void encode_bpe_text(const Tokenizer::Impl& t, std::string_view text, std::vector<int32_t>& out) {
    const std::vector<uint32_t> cps = unicode::decode_utf8(text);
    std::string word;
    for (const auto& [begin, end] : t.pre_tokenizer->split(cps)) {
        const std::string utf8 = unicode::encode_utf8(cps.data() + begin, end - begin);
        if (t.spm_style_bpe) {
            // A run of newlines that is itself a token stays whole (Gemma 4, as llama.cpp).
            if (utf8.find_first_not_of('\n') == std::string::npos)
                if (const int32_t id = t.vocab.find(utf8); id >= 0) {
                    out.push_back(id);
                    continue;
                }
            detail::bpe_encode_word(t.vocab, *t.merges, utf8, t.ignore_merges, /*byte_tokens=*/true, out);
            continue;
        }
        // The word's UTF-8 bytes, each written as its GPT-2 byte-level code point.
        word.clear();
        for (char c : utf8) unicode::append_utf8(word, unicode::byte_to_code_point(uint8_t(c)));
        detail::bpe_encode_word(t.vocab, *t.merges, word, t.ignore_merges, /*byte_tokens=*/false, out);
    }
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const gguf::File& f) {
    return std::unique_ptr<Tokenizer>(new Tokenizer(load_tokenizer(f)));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
    const Impl& t = *impl_;
    std::vector<int32_t> out;
    if (add_special && t.add_bos) out.push_back(t.bos);
    const std::vector<Fragment> fragments = partition(t, text, parse_special);
    if (t.model == Impl::Model::SentencePiece) {
        bool after_special = true;  // the text start counts as following a special token
        for (const Fragment& f : fragments) {
            if (f.token >= 0) {
                out.push_back(f.token);
                after_special = true;
                continue;
            }
            std::string piece = (t.add_space_prefix && after_special) ? " " : "";
            piece.append(text.substr(f.offset, f.length));
            replace_all(piece, " ", kSpmSpace);
            detail::spm_encode(t.vocab, piece, out);
            after_special = false;
        }
    } else if (t.model == Impl::Model::Unigram) {
        for (const Fragment& f : fragments) {
            if (f.token >= 0)
                out.push_back(f.token);
            else
                t.unigram->encode(t.vocab, text.substr(f.offset, f.length), out);
        }
    } else if (t.model == Impl::Model::WordPiece) {
        for (const Fragment& f : fragments) {
            if (f.token >= 0)
                out.push_back(f.token);
            else
                detail::wordpiece_encode(t.vocab, t.max_token_len, text.substr(f.offset, f.length), t.lowercase,
                                         t.strip_accents, out);
        }
    } else {
        for (const Fragment& f : fragments) {
            if (f.token >= 0) {
                out.push_back(f.token);
            } else if (t.spm_style_bpe) {
                std::string piece(text.substr(f.offset, f.length));
                replace_all(piece, " ", kSpmSpace);
                encode_bpe_text(t, piece, out);
            } else {
                encode_bpe_text(t, text.substr(f.offset, f.length), out);
            }
        }
    }
    if (add_special && t.add_eos) out.push_back(t.eos);
    if (add_special && t.add_sep) out.push_back(t.sep);
    return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
    const Impl& t = *impl_;
    const std::string& text = token_text(id);
    const uint16_t attr = t.vocab.attr[size_t(id)];
    if (attr & (detail::kAttrControl | detail::kAttrUnknown)) return render_special ? text : std::string();
    if (attr & detail::kAttrUserDefined) return text;
    if (attr & detail::kAttrNormal) {
        if (t.model != Impl::Model::ByteLevelBpe || t.spm_style_bpe) {  // U+2581 is a space
            std::string piece = text;
            replace_all(piece, kSpmSpace, " ");
            return piece;
        }
        // Byte-level: each code point stands for one byte.
        std::string piece;
        for (uint32_t cp : unicode::decode_utf8(text)) {
            const int byte = unicode::code_point_to_byte(cp);
            if (byte >= 0)
                piece.push_back(char(byte));
            else
                unicode::append_utf8(piece, cp);  // not a byte symbol: keep the character
        }
        return piece;
    }
    if (attr & detail::kAttrByte) {  // "<0xXX>"
        if (text.size() == 6 && text.compare(0, 3, "<0x") == 0 && std::isxdigit(uint8_t(text[3])) &&
            std::isxdigit(uint8_t(text[4])))
            return std::string(1, char(std::stoi(text.substr(3, 2), nullptr, 16)));
        return text;
    }
    return std::string();  // UNUSED / UNDEFINED
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool render_special) const {
    std::string out;
    // SentencePiece with a space prefix, and WordPiece (each word starts with U+2581): the
    // first piece's leading space is not part of the text.
    bool strip_space = ((impl_->model == Impl::Model::SentencePiece || impl_->model == Impl::Model::Unigram) &&
                        impl_->add_space_prefix) ||
                       impl_->model == Impl::Model::WordPiece;
    for (int32_t id : ids) {
        std::string piece = token_to_piece(id, render_special);
        if (strip_space && !piece.empty()) {
            if (piece[0] == ' ') piece.erase(0, 1);
            strip_space = false;
        }
        out += piece;
    }
    return out;
}

int32_t Tokenizer::n_vocab() const { return impl_->vocab.n(); }
const std::vector<std::string>& Tokenizer::warnings() const { return impl_->warnings; }
int32_t Tokenizer::bos() const { return impl_->bos; }
int32_t Tokenizer::eos() const { return impl_->eos; }
int32_t Tokenizer::eot() const { return impl_->eot; }
int32_t Tokenizer::eom() const { return impl_->eom; }
int32_t Tokenizer::unk() const { return impl_->unk; }
int32_t Tokenizer::pad() const { return impl_->pad; }
int32_t Tokenizer::sep() const { return impl_->sep; }
int32_t Tokenizer::mask() const { return impl_->mask; }
bool Tokenizer::add_sep() const { return impl_->add_sep; }
bool Tokenizer::add_bos() const { return impl_->add_bos; }
bool Tokenizer::add_eos() const { return impl_->add_eos; }
bool Tokenizer::add_space_prefix() const { return impl_->add_space_prefix; }
const std::vector<int32_t>& Tokenizer::eog_ids() const { return impl_->eog; }

bool Tokenizer::is_eog(int32_t id) const {
    return id >= 0 && std::binary_search(impl_->eog.begin(), impl_->eog.end(), id);
}

const std::string& Tokenizer::token_text(int32_t id) const {
    if (id < 0 || id >= n_vocab())
        throw TokenizerError("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                             std::to_string(n_vocab()) + ")");
    return impl_->vocab.text[size_t(id)];
}

TokenType Tokenizer::token_type(int32_t id) const {
    token_text(id);  // range check
    const uint16_t attr = impl_->vocab.attr[size_t(id)];
    if (attr & detail::kAttrControl) return TokenType::Control;
    if (attr & detail::kAttrUserDefined) return TokenType::UserDefined;
    if (attr & detail::kAttrUnknown) return TokenType::Unknown;
    if (attr & detail::kAttrByte) return TokenType::Byte;
    if (attr & detail::kAttrUnused) return TokenType::Unused;
    if (attr & detail::kAttrNormal) return TokenType::Normal;
    return TokenType::Undefined;
}

bool Tokenizer::is_control(int32_t id) const {
    token_text(id);
    return (impl_->vocab.attr[size_t(id)] & (detail::kAttrControl | detail::kAttrUnknown)) != 0;
}

int32_t Tokenizer::find_token(std::string_view text) const { return impl_->vocab.find(text); }

std::string Tokenizer::kind() const {
    if (impl_->model == Impl::Model::SentencePiece) return "llama (SentencePiece)";
    if (impl_->model == Impl::Model::WordPiece) return "bert (WordPiece)";
    if (impl_->model == Impl::Model::Unigram) return "t5 (SentencePiece Unigram)";
    if (impl_->spm_style_bpe) return impl_->model_name + " (SentencePiece-style BPE, pre=" + impl_->pre_name + ")";
    return "gpt2 (byte-level BPE, pre=" + impl_->pre_name + ")";
}

}  // namespace vkllm::tokenizer

namespace vkllm {

std::string Utf8Decoder::push(const std::string& piece) {
    pending_ += piece;
    // Find where an unfinished multi-byte sequence starts, looking back at most 3 bytes.
    size_t cut = pending_.size();
    for (size_t back = 1; back <= 3 && back <= pending_.size(); ++back) {
        const uint8_t b = uint8_t(pending_[pending_.size() - back]);
        if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
        if (b >= 0xC0 && tokenizer::unicode::utf8_sequence_length(b) > back) cut = pending_.size() - back;
        break;
    }
    std::string ready = pending_.substr(0, cut);
    pending_.erase(0, cut);
    return ready;
}

std::string Utf8Decoder::flush() {
    std::string rest;
    rest.swap(pending_);
    return rest;
}

}  // namespace vkllm
