// The pre-tokenizer table and the split algorithm. Patterns are the split regexes of each
// model family's tokenizer.json (as llama.cpp's llama-vocab.cpp lists them, which also gives the
// name -> family mapping). To support a new `tokenizer.ggml.pre`, add a name to an entry or add
// an entry; nothing else changes.
#include "tokenizer/pretokenizer.h"

namespace vkllm::tokenizer {

namespace {

// GPT-2: contractions, letters, numbers, other symbols, each with an optional leading space.
constexpr std::string_view kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// cl100k (Llama 3): case-insensitive contractions, numbers in groups of up to three, newlines
// kept with the whitespace or punctuation before them.
constexpr std::string_view kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2: as Llama 3 but single digits.
constexpr std::string_view kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen3.5: as Qwen2, with combining marks inside words.
constexpr std::string_view kQwen35 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// o200k (GPT-4o, Llama 4, gpt-oss): words split at lower -> upper case changes.
constexpr std::string_view kO200k =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Tekken (Mistral NeMo and later): o200k's word rule without contractions, single digits.
constexpr std::string_view kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// DeepSeek LLM: explicit letter ranges (Latin, Greek, Cyrillic, ...), then punctuation, CJK runs.
constexpr std::string_view kDeepseekLetters = R"(\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+)";
constexpr std::string_view kDeepseekPunct = R"(\s?[!-/:-~！-／：-～‘-‟\u3000-。]+)";
constexpr std::string_view kDeepseekCjk = R"([一-龥ࠀ-一가-\uD7FF]+)";
// DeepSeek V3: digits in threes, CJK/kana runs, then words and punctuation runs.
constexpr std::string_view kDeepseekV3Words =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// BLOOM family: everything up to whitespace or sentence punctuation.
constexpr std::string_view kBloom = R"( ?[^(\s|.,!?…。，、।۔،)]+)";

const std::vector<PreTokenizerSpec>& table() {
    static const std::vector<PreTokenizerSpec> entries = {
        {{"default"},
         {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", R"([0-9][0-9][0-9])"}},
        {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"},
         {kLlama3}, /*ignore_merges=*/true, /*add_bos=*/true},
        {{"dbrx", "smaug-bpe"}, {kLlama3}},
        {{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
          "modern-bert", "mpt", "olmo", "jais", "trillion", "granite-docling", "exaone4"},
         {kGpt2}},
        {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "stablelm2", "hunyuan", "solar-open", "grok-2"},
         {kQwen2}},
        {{"qwen35"}, {kQwen35}},
        {{"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}, {kO200k}},
        {{"tekken"}, {kTekken}, /*ignore_merges=*/true, /*add_bos=*/true},
        {{"deepseek-llm"},
         {R"([\r\n])", kDeepseekLetters, kDeepseekPunct, R"(\s+$)", kDeepseekCjk, R"(\p{N}+)"}},
        {{"deepseek-coder"},
         {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kDeepseekCjk, R"(\p{N})"}},
        {{"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"},
         {R"(\p{N}{1,3})", R"([一-龥぀-ゟ゠-ヿ]+)", kDeepseekV3Words}},
        {{"falcon"},
         {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, R"([0-9][0-9][0-9])"}},
        {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2"},
         {R"(\p{N})", kGpt2}},
        {{"poro-chat", "bloom", "gpt3-finnish"}, {kBloom}},
        {{"viking"}, {kBloom, R"(\p{N})"}},
        // SentencePiece-style BPE: the whole line is one word (llama.cpp only splits off newlines).
        {{"gemma4", "granite-embed-multi-311m"}, {R"([^\n]+|[\n]+)"}, false, /*add_bos=*/true, /*spm_style=*/true},
    };
    return entries;
}

}  // namespace

const PreTokenizerSpec* find_pre_tokenizer(std::string_view name) {
    for (const PreTokenizerSpec& spec : table())
        for (std::string_view n : spec.names)
            if (n == name) return &spec;
    return nullptr;
}

std::string supported_pre_tokenizer_names() {
    std::string out;
    for (const PreTokenizerSpec& spec : table())
        for (std::string_view n : spec.names) {
            if (!out.empty()) out += ", ";
            out += n;
        }
    return out;
}

PreTokenizer::PreTokenizer(const PreTokenizerSpec& spec) {
    regexes_.reserve(spec.patterns.size());
    for (std::string_view p : spec.patterns) regexes_.emplace_back(p);
}

std::vector<std::pair<size_t, size_t>> PreTokenizer::split(const std::vector<uint32_t>& cps) const {
    std::vector<std::pair<size_t, size_t>> pieces;
    if (cps.empty()) return pieces;
    pieces.emplace_back(0, cps.size());
    std::vector<std::pair<size_t, size_t>> next;
    for (const Regex& regex : regexes_) {
        next.clear();
        for (const auto& [begin, end] : pieces) {
            size_t done = begin;  // text before `done` is already in `next`
            size_t from = begin;
            while (from <= end) {
                const auto m = regex.search(cps.data(), begin, end, from);
                if (!m) break;
                if (m->end == m->begin) {  // an empty match splits nothing
                    from = m->begin + 1;
                    continue;
                }
                if (m->begin > done) next.emplace_back(done, m->begin);
                next.emplace_back(m->begin, m->end);
                done = from = m->end;
            }
            if (done < end) next.emplace_back(done, end);
        }
        pieces.swap(next);
    }
    return pieces;
}

}  // namespace vkllm::tokenizer
