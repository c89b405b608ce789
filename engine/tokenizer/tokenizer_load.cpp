// Tokenizer state from GGUF metadata. Defaults and fix-ups follow llama.cpp's llama-vocab.cpp
// so that both engines tokenize the same file the same way.
#include <algorithm>
#include <cctype>
#include <cstdio>

#include "tokenizer/tokenizer_impl.h"

namespace vkllm::tokenizer {

namespace {

using detail::Vocab;

constexpr const char* kModelKey = "tokenizer.ggml.model";
constexpr const char* kPreKey = "tokenizer.ggml.pre";
// Every `tokenizer.ggml.model` llama.cpp knows is either one of these or refused with this list
// (rwkv, plamo2, hybriddna, whitespace, test, none).
constexpr const char* kSupportedModels =
    "llama (SentencePiece BPE), gpt2 (byte-level BPE), gemma4 (SentencePiece-style BPE), bert (WordPiece), "
    "t5 (SentencePiece Unigram)";

// Texts of tokens that end generation in the model families we know (llama.cpp's list).
constexpr std::string_view kEndOfGenerationTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<｜end▁of▁sentence｜>", "[e~[",
};
// Candidates for the end-of-turn token when `tokenizer.ggml.eot_token_id` is absent, in order.
constexpr std::string_view kEndOfTurnTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>",
};
// Fill-in-the-middle pad / repository / file-separator tokens also end generation.
// The first one of each group present counts.
const std::vector<std::vector<std::string_view>> kFimEndTexts = {
    {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"},
    {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"},
    {"<|file_sep|>"},
};

uint16_t attr_from_type(int64_t type) {
    switch (static_cast<TokenType>(type)) {
        case TokenType::Normal: return detail::kAttrNormal;
        case TokenType::Unknown: return detail::kAttrUnknown;
        case TokenType::Control: return detail::kAttrControl;
        case TokenType::UserDefined: return detail::kAttrUserDefined;
        case TokenType::Unused: return detail::kAttrUnused;
        case TokenType::Byte: return detail::kAttrByte;
        default: return 0;  // UNDEFINED: renders as nothing
    }
}

std::string where(const gguf::File& f) { return f.path().empty() ? std::string("model file") : f.path(); }

void read_vocab(const gguf::File& f, Vocab& v) {
    auto tokens = f.get_strings("tokenizer.ggml.tokens");
    if (!tokens || tokens->empty())
        throw TokenizerError(where(f) + ": no vocabulary (tokenizer.ggml.tokens is missing or empty)");
    const size_t n = tokens->size();
    if (n > size_t(INT32_MAX)) throw TokenizerError(where(f) + ": vocabulary too large");
    v.text = std::move(*tokens);

    v.score.assign(n, 0.0f);
    if (auto scores = f.get_floats("tokenizer.ggml.scores")) {
        if (scores->size() < n)
            throw TokenizerError(where(f) + ": tokenizer.ggml.scores has " + std::to_string(scores->size()) +
                                 " entries for " + std::to_string(n) + " tokens");
        std::copy_n(scores->begin(), n, v.score.begin());
    }
    v.attr.assign(n, detail::kAttrNormal);
    if (auto types = f.get_ints("tokenizer.ggml.token_type")) {
        if (types->size() < n)
            throw TokenizerError(where(f) + ": tokenizer.ggml.token_type has " + std::to_string(types->size()) +
                                 " entries for " + std::to_string(n) + " tokens");
        for (size_t i = 0; i < n; ++i) v.attr[i] = attr_from_type((*types)[i]);
    }

    v.id_of.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        if (v.text[i].empty()) v.text[i] = "[EMPTY_" + std::to_string(i) + "]";  // as llama.cpp names them
        v.id_of.insert_or_assign(v.text[i], int32_t(i));
    }
    static const char* kHex = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) {
        const char name[7] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>', 0};
        v.byte_token[size_t(b)] = v.find(name);
    }
}

// A special-token id from metadata. A value outside the vocabulary leaves `id` at its default
// (as llama.cpp does) with a warning, except -1 and 0xFFFFFFFF, the usual ways to say "none".
void read_special_id(const gguf::File& f, const std::string& key, int32_t n_vocab, int32_t& id,
                     std::vector<std::string>& warnings) {
    if (id >= n_vocab) id = -1;
    const auto v = f.get_int(key);
    if (!v) return;
    if (*v >= 0 && *v < n_vocab) {
        id = int32_t(*v);
        return;
    }
    if (*v == -1 || *v == int64_t(UINT32_MAX)) return;
    const std::string fallback = id >= 0 ? "the default " + std::to_string(id) : "none";
    warnings.push_back(key + " is " + std::to_string(*v) + ", outside the vocabulary of " + std::to_string(n_vocab) +
                       " tokens; using " + fallback);
}

void read_flag(const gguf::File& f, const std::string& key, bool& flag) {
    if (const auto v = f.get_bool(key)) flag = *v;
}

void mark_control(Vocab& v, int32_t id) { v.attr[size_t(id)] |= detail::kAttrControl; }

// End-of-turn detection, the end-of-generation set and its model-specific exceptions.
void find_end_of_generation(Tokenizer::Impl& t) {
    Vocab& v = t.vocab;
    if (t.eot < 0) {
        for (std::string_view s : kEndOfTurnTexts)
            if (int32_t id = v.find(s); id >= 0) { t.eot = id; break; }
    }
    if (t.eom < 0) t.eom = v.find("<|eom_id|>");
    if (t.eot >= 0) mark_control(v, t.eot);
    if (t.eom >= 0) mark_control(v, t.eom);

    std::vector<int32_t> eog;
    for (const auto& group : kFimEndTexts)
        for (std::string_view s : group)
            if (int32_t id = v.find(s); id >= 0) {
                mark_control(v, id);
                eog.push_back(id);
                break;
            }
    for (std::string_view s : kEndOfGenerationTexts)
        if (int32_t id = v.find(s); id >= 0) {
            mark_control(v, id);
            eog.push_back(id);
        }
    // gpt-oss (harmony format): these structure tokens are always rendered.
    for (std::string_view s : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"})
        if (int32_t id = v.find(s); id >= 0) v.attr[size_t(id)] = detail::kAttrUserDefined;
    for (int32_t id : {t.eos, t.eot, t.eom})
        if (id >= 0) eog.push_back(id);
    std::sort(eog.begin(), eog.end());
    eog.erase(std::unique(eog.begin(), eog.end()), eog.end());

    auto in_eog = [&](std::string_view s) {
        const int32_t id = v.find(s);
        return id >= 0 && std::binary_search(eog.begin(), eog.end(), id);
    };
    auto remove_from_eog = [&](std::string_view s, uint16_t new_attr) {
        const int32_t id = v.find(s);
        eog.erase(std::remove(eog.begin(), eog.end(), id), eog.end());
        v.attr[size_t(id)] = new_attr;
    };
    // Harmony / solar-open: "<|end|>" ends a message, not the generation.
    if (in_eog("<|end|>") && ((in_eog("<|return|>") && in_eog("<|call|>")) || (in_eog("<|calls|>") && in_eog("<|flush|>"))))
        remove_from_eog("<|end|>", detail::kAttrUserDefined);
    // Gemma 4: "</s>" is ordinary text there.
    if (in_eog("<|tool_response>") && in_eog("</s>")) remove_from_eog("</s>", detail::kAttrNormal);
    t.eog = std::move(eog);
}

void collect_special_tokens(Tokenizer::Impl& t, const gguf::File& f) {
    const Vocab& v = t.vocab;
    const uint16_t matched = detail::kAttrControl | detail::kAttrUserDefined | detail::kAttrUnknown;
    for (int32_t id = 0; id < v.n(); ++id)
        if (v.attr[size_t(id)] & matched) t.special_tokens.push_back(id);
    std::stable_sort(t.special_tokens.begin(), t.special_tokens.end(), [&](int32_t a, int32_t b) {
        return v.text[size_t(a)].size() > v.text[size_t(b)].size();
    });

    // Phi-3 (llama.cpp keys this on the model name): special tokens swallow the whitespace
    // after them, except <unk>, <s> and <|endoftext|>.
    std::string name = f.get_string("general.name").value_or("");
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
        for (int32_t id : t.special_tokens) t.vocab.attr[size_t(id)] |= detail::kAttrRstrip;
        if (int32_t id = v.find("</s>"); id >= 0) t.vocab.attr[size_t(id)] |= detail::kAttrRstrip;
        for (std::string_view s : {"<unk>", "<s>", "<|endoftext|>"})
            if (int32_t id = v.find(s); id >= 0) t.vocab.attr[size_t(id)] &= uint16_t(~detail::kAttrRstrip);
    }
}

}  // namespace

std::unique_ptr<Tokenizer::Impl> load_tokenizer(const gguf::File& f) {
    auto t = std::make_unique<Tokenizer::Impl>();
    const auto model = f.get_string(kModelKey);
    if (!model) throw TokenizerError(where(f) + ": no tokenizer (" + kModelKey + " is missing)");

    const PreTokenizerSpec* pre_spec = nullptr;
    t->model_name = *model;
    bool remove_extra_whitespaces = false;
    if (*model == "llama") {
        t->model = Tokenizer::Impl::Model::SentencePiece;
        t->bos = 1, t->eos = 2, t->unk = 0;  // SentencePiece defaults
        t->add_bos = true;
        t->add_space_prefix = true;
    } else if (*model == "gpt2" || *model == "gemma4") {
        t->model = Tokenizer::Impl::Model::ByteLevelBpe;
        // "gemma4" is SentencePiece-style BPE whatever the file's pre-tokenizer says.
        t->pre_name = *model == "gemma4" ? std::string("gemma4") : f.get_string(kPreKey).value_or("default");
        pre_spec = find_pre_tokenizer(t->pre_name);
        if (!pre_spec)
            throw TokenizerError(where(f) + ": unsupported pre-tokenizer '" + t->pre_name + "' (" + kPreKey +
                                 "); supported: " + supported_pre_tokenizer_names());
        t->ignore_merges = pre_spec->ignore_merges;
        t->add_bos = pre_spec->add_bos;
        t->spm_style_bpe = pre_spec->spm_style;
    } else if (*model == "bert") {
        // llama.cpp's defaults for a WordPiece vocabulary: [CLS] text [SEP], BERT's ids.
        t->model = Tokenizer::Impl::Model::WordPiece;
        t->bos = 101, t->unk = 100, t->sep = 102, t->pad = 0, t->mask = 103;
        t->add_bos = true;
        t->add_sep = true;
    } else if (*model == "t5") {
        // SentencePiece Unigram; llama.cpp's defaults: no BOS, EOS appended.
        t->model = Tokenizer::Impl::Model::Unigram;
        t->eos = 1, t->unk = 2, t->pad = 0;
        t->add_eos = true;
        read_flag(f, "tokenizer.ggml.remove_extra_whitespaces", remove_extra_whitespaces);
    } else {
        throw TokenizerError(where(f) + ": unsupported tokenizer model '" + *model + "' (" + kModelKey +
                             "); supported: " + kSupportedModels);
    }
    read_flag(f, "tokenizer.ggml.add_space_prefix", t->add_space_prefix);

    read_vocab(f, t->vocab);
    const int32_t n = t->vocab.n();

    if (t->model == Tokenizer::Impl::Model::ByteLevelBpe) {
        auto merges = f.get_strings("tokenizer.ggml.merges");
        if (!merges) throw TokenizerError(where(f) + ": byte-level BPE vocabulary without tokenizer.ggml.merges");
        t->merges = std::make_unique<detail::BpeMerges>(*merges);
        try {
            t->pre_tokenizer = std::make_unique<PreTokenizer>(*pre_spec);
        } catch (const RegexError& e) {
            throw TokenizerError(std::string("pre-tokenizer '") + t->pre_name + "': " + e.what());
        }
    }

    read_special_id(f, "tokenizer.ggml.bos_token_id", n, t->bos, t->warnings);
    read_special_id(f, "tokenizer.ggml.eos_token_id", n, t->eos, t->warnings);
    read_special_id(f, "tokenizer.ggml.eot_token_id", n, t->eot, t->warnings);
    read_special_id(f, "tokenizer.ggml.eom_token_id", n, t->eom, t->warnings);
    read_special_id(f, "tokenizer.ggml.unknown_token_id", n, t->unk, t->warnings);
    read_special_id(f, "tokenizer.ggml.padding_token_id", n, t->pad, t->warnings);
    read_special_id(f, "tokenizer.ggml.seperator_token_id", n, t->sep, t->warnings);  // llama.cpp's spelling
    read_special_id(f, "tokenizer.ggml.mask_token_id", n, t->mask, t->warnings);
    t->vocab.unk = t->unk;
    read_flag(f, "tokenizer.ggml.add_bos_token", t->add_bos);
    read_flag(f, "tokenizer.ggml.add_eos_token", t->add_eos);
    read_flag(f, "tokenizer.ggml.add_sep_token", t->add_sep);
    if (t->add_sep && t->sep < 0) t->add_sep = false;
    if (t->model == Tokenizer::Impl::Model::WordPiece) {
        // BERT's normalizer: accents are stripped when lower-casing unless the file says otherwise.
        read_flag(f, "tokenizer.ggml.normalizer.lowercase", t->lowercase);
        t->strip_accents = t->lowercase;
        read_flag(f, "tokenizer.ggml.normalizer.strip_accents", t->strip_accents);
        for (const std::string& s : t->vocab.text) t->max_token_len = std::max(t->max_token_len, s.size());
    }
    if (t->spm_style_bpe) t->add_bos = true;  // Gemma 4 files that say otherwise are wrong (llama.cpp overrides them too)
    if (t->model == Tokenizer::Impl::Model::Unigram) {
        std::vector<uint8_t> charsmap;
        if (auto bytes = f.get_ints("tokenizer.ggml.precompiled_charsmap"))
            for (int64_t b : *bytes) charsmap.push_back(uint8_t(b));
        try {
            t->unigram = std::make_unique<detail::Unigram>(t->vocab, detail::CharsMap(std::move(charsmap)),
                                                           t->add_space_prefix, remove_extra_whitespaces);
        } catch (const std::runtime_error& e) {
            throw TokenizerError(where(f) + ": tokenizer.ggml." + e.what());
        }
    }
    if (t->add_bos && t->bos < 0) t->add_bos = false;  // nothing to add
    if (t->add_eos && t->eos < 0) t->add_eos = false;

    find_end_of_generation(*t);
    collect_special_tokens(*t, f);
    return t;
}

}  // namespace vkllm::tokenizer
