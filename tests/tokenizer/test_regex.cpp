// The pieces under the tokenizer: Unicode tables and UTF-8, the code-point regex matcher and
// the pre-tokenizer table.
#include <gtest/gtest.h>

#include <sstream>

#include "tokenizer/pretokenizer.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"

using namespace vkllm::tokenizer;
namespace uni = vkllm::tokenizer::unicode;

namespace {

std::vector<uint32_t> cps(const std::string& s) { return uni::decode_utf8(s); }

// The first match of `pattern` in `text` as a string, or "<none>".
std::string first_match(const std::string& pattern, const std::string& text, size_t from = 0) {
    const Regex re(pattern);
    const auto t = cps(text);
    const auto m = re.search(t.data(), 0, t.size(), from);
    if (!m) return "<none>";
    return uni::encode_utf8(t.data() + m->begin, m->end - m->begin);
}

std::vector<std::string> split(std::string_view pre_name, const std::string& text) {
    const PreTokenizerSpec* spec = find_pre_tokenizer(pre_name);
    if (!spec) throw std::runtime_error("no pre-tokenizer " + std::string(pre_name));
    const PreTokenizer pre(*spec);
    const auto t = cps(text);
    std::vector<std::string> words;
    for (const auto& [b, e] : pre.split(t)) words.push_back(uni::encode_utf8(t.data() + b, e - b));
    return words;
}

using Words = std::vector<std::string>;

}  // namespace

TEST(Unicode, Categories) {
    EXPECT_EQ(uni::category('A'), uni::Category::Lu);
    EXPECT_EQ(uni::category(0xE9), uni::Category::Ll);    // é
    EXPECT_EQ(uni::category('7'), uni::Category::Nd);
    EXPECT_EQ(uni::category(0xBD), uni::Category::No);    // ½
    EXPECT_EQ(uni::category(' '), uni::Category::Zs);
    EXPECT_EQ(uni::category(0x1F999), uni::Category::So);  // 🦙
    EXPECT_EQ(uni::category(0x0301), uni::Category::Mn);  // combining acute
    EXPECT_EQ(uni::category(0x6771), uni::Category::Lo);  // 東
    EXPECT_EQ(uni::category(0x0378), uni::Category::Cn);  // unassigned
    EXPECT_EQ(uni::category(0x10FFFF), uni::Category::Cn);
    EXPECT_TRUE(uni::is_letter(0x0416));                  // Ж
    EXPECT_TRUE(uni::is_number(0x0664));                  // Arabic-Indic four
    for (uint32_t ws : {0x09u, 0x0Au, 0x0Du, 0x20u, 0x85u, 0xA0u, 0x2009u, 0x3000u}) EXPECT_TRUE(uni::is_white_space(ws)) << ws;
    for (uint32_t not_ws : {0x1Cu, 0x200Bu, 0x61u, 0x2581u}) EXPECT_FALSE(uni::is_white_space(not_ws)) << not_ws;
}

TEST(Unicode, Utf8CodingIsLenient) {
    EXPECT_EQ(cps("a\xC3\xA9\xF0\x9F\xA6\x99"), (std::vector<uint32_t>{'a', 0xE9, 0x1F999}));
    // A stray continuation byte and a truncated sequence each become one U+FFFD per byte.
    EXPECT_EQ(cps("\x80z\xE6\x9D"), (std::vector<uint32_t>{0xFFFD, 'z', 0xFFFD, 0xFFFD}));
    const std::vector<uint32_t> round = {0x24, 0xA2, 0x20AC, 0x10348};
    EXPECT_EQ(cps(uni::encode_utf8(round.data(), round.size())), round);
    EXPECT_EQ(uni::utf8_sequence_length(0x41), 1u);
    EXPECT_EQ(uni::utf8_sequence_length(0xC3), 2u);
    EXPECT_EQ(uni::utf8_sequence_length(0xE6), 3u);
    EXPECT_EQ(uni::utf8_sequence_length(0xF0), 4u);
}

TEST(Unicode, ByteLevelMappingIsABijection) {
    EXPECT_EQ(uni::byte_to_code_point(' '), 0x120u);  // Ġ
    EXPECT_EQ(uni::byte_to_code_point('\n'), 0x10Au);  // Ċ
    EXPECT_EQ(uni::byte_to_code_point('a'), uint32_t('a'));
    EXPECT_EQ(uni::byte_to_code_point(0xAD), 0x143u);  // soft hyphen is not printable
    std::vector<bool> seen(0x200);
    for (int b = 0; b < 256; ++b) {
        const uint32_t cp = uni::byte_to_code_point(uint8_t(b));
        ASSERT_LT(cp, seen.size());
        EXPECT_FALSE(seen[cp]);
        seen[cp] = true;
        EXPECT_EQ(uni::code_point_to_byte(cp), b);
    }
    EXPECT_EQ(uni::code_point_to_byte(0x2581), -1);
}

TEST(Regex, ClassesAndCategories) {
    EXPECT_EQ(first_match(R"(\p{L}+)", "12abé3"), "abé");
    EXPECT_EQ(first_match(R"(\p{N}+)", "ab½12c"), "½12");
    EXPECT_EQ(first_match(R"(\p{Lu}\p{Ll}+)", "abcDefG"), "Def");
    EXPECT_EQ(first_match(R"([^\s\p{L}\p{N}]+)", "ab  ?!x"), "?!");
    EXPECT_EQ(first_match(R"(\P{L}+)", "ab12 c"), "12 ");
    EXPECT_EQ(first_match(R"([\r\n]+)", "a\r\n\nb"), "\r\n\n");
    EXPECT_EQ(first_match(R"([a-cx-z]+)", "dbxaq"), "bxa");
    EXPECT_EQ(first_match(R"([\[\]\\\-]+)", "a[-]\\b"), "[-]\\");
    EXPECT_EQ(first_match(R"([一-龥]+)", "ab東京c"), "東京");
    EXPECT_EQ(first_match(R"(\s+)", "a\xE3\x80\x80 b"), "\xE3\x80\x80 ");  // U+3000 is \s
    EXPECT_EQ(first_match(R"(\x41\u00e9)", "zAé"), "Aé");
    EXPECT_EQ(first_match(R"(\d+\w*)", "ab 42x_9"), "42x_9");
    EXPECT_EQ(first_match(R"(.+)", "ab\ncd"), "ab");
    EXPECT_EQ(first_match("x", "abc"), "<none>");
}

TEST(Regex, PerlPrioritiesAndBacktracking) {
    EXPECT_EQ(first_match("a|ab", "ab"), "a");  // alternatives in order, not longest
    EXPECT_EQ(first_match("ab|a", "ab"), "ab");
    EXPECT_EQ(first_match("a+?", "aaa"), "a");
    EXPECT_EQ(first_match("a{2,3}", "aaaa"), "aaa");
    EXPECT_EQ(first_match("a{2}", "aaaa"), "aa");
    EXPECT_EQ(first_match("a{2,}b", "aaaab"), "aaaab");
    EXPECT_EQ(first_match(R"(\s*[\r\n]+)", " \n \n  x"), " \n \n");  // \s* gives back until [\r\n]
    EXPECT_EQ(first_match(R"(\s+(?!\S))", "a   b"), "  ");            // leaves one space for " b"
    EXPECT_EQ(first_match(R"(\s+(?!\S))", "a   "), "   ");            // at the end all of it
    EXPECT_EQ(first_match(R"(\s+$)", "a  b  "), "  ");
    EXPECT_EQ(first_match(R"(\s+$)", "a  b  ", 2), "  ");
    EXPECT_EQ(first_match(R"((?=\p{Lu})\p{L}+)", "abCd"), "Cd");
    EXPECT_EQ(first_match(R"((?i:'s|'ll))", "it'S"), "'S");
    EXPECT_EQ(first_match(R"('(?:[sS]|[lL][lL]))", "we'LL"), "'LL");
    EXPECT_EQ(first_match(R"(\bab)", "cab ab"), "ab");
    EXPECT_EQ(first_match("(ab)+c", "xababc"), "ababc");
    EXPECT_EQ(first_match("a{,2}", "a{,2}"), "a{,2}");  // not a quantifier: literal braces
}

TEST(Regex, WindowEdgesAreTextEdges) {
    const Regex re(R"(\s+(?!\S)|\s+$)");
    const auto t = cps("a  b");
    // Inside the window [0, 3) ("a  "), the two spaces end the text.
    const auto m = re.search(t.data(), 0, 3, 0);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->begin, 1u);
    EXPECT_EQ(m->end, 3u);
}

TEST(Regex, RejectsWhatItCannotDo) {
    for (const char* bad : {"(?<=a)b", "a++", "[abc", "(ab", "ab)", "\\p{Foo}", "*a", "(a*)*", "\\k<x>", "[[:alpha:]]"}) {
        EXPECT_THROW(Regex{bad}, RegexError) << bad;
    }
}

TEST(PreTokenizer, Gpt2Words) {
    EXPECT_EQ(split("gpt-2", "Hello world's  end!!\n"),
              (Words{"Hello", " world", "'s", " ", " end", "!!", "\n"}));
    EXPECT_EQ(split("gpt-2", "I've 123 apples"), (Words{"I", "'ve", " 123", " apples"}));
}

TEST(PreTokenizer, Llama3AndQwen2Digits) {
    EXPECT_EQ(split("llama-bpe", "x1234567"), (Words{"x", "123", "456", "7"}));
    EXPECT_EQ(split("qwen2", "x123"), (Words{"x", "1", "2", "3"}));
    EXPECT_EQ(split("llama-bpe", "Hi!\n\n  there"), (Words{"Hi", "!\n\n", " ", " there"}));
    EXPECT_EQ(split("llama-bpe", "DON'T"), (Words{"DON", "'T"}));
}

TEST(PreTokenizer, PatternsApplyInSequence) {
    // deepseek-llm: newlines split first, then letters, punctuation, CJK runs and digits.
    EXPECT_EQ(split("deepseek-llm", "Hi, 東京\n42"), (Words{"Hi", ",", " ", "東京", "\n", "42"}));
    // default: punctuation runs first, then GPT-2 words, then digit runs, then digit triples.
    EXPECT_EQ(split("default", "a+b 12345"), (Words{"a", "+", "b", " ", "123", "45"}));
}

TEST(PreTokenizer, EveryTableEntryCompilesAndCoversTheText) {
    const std::string sample = "Hello, WORLD's 12345 apples!\n\n  東京 カタカナ naïve 🦙\t-- x";
    const auto t = cps(sample);
    std::istringstream names(supported_pre_tokenizer_names());
    size_t n_names = 0;
    for (std::string name; std::getline(names, name, ',');) {
        if (!name.empty() && name[0] == ' ') name.erase(0, 1);
        ++n_names;
        SCOPED_TRACE(name);
        const PreTokenizerSpec* spec = find_pre_tokenizer(name);
        ASSERT_NE(spec, nullptr);
        const PreTokenizer pre(*spec);
        size_t expect_begin = 0;
        for (const auto& [b, e] : pre.split(t)) {
            EXPECT_EQ(b, expect_begin);
            EXPECT_LT(b, e);
            expect_begin = e;
        }
        EXPECT_EQ(expect_begin, t.size());
    }
    EXPECT_GE(n_names, 20u);
    EXPECT_EQ(find_pre_tokenizer("no-such-model"), nullptr);
}
