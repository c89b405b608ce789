// Unicode facts the tokenizers need: UTF-8 coding, general categories (for the pre-tokenizer's
// \p{L}, \p{N}, ... classes), White_Space (for \s) and GPT-2's byte <-> code point mapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vkllm::tokenizer::unicode {

// Unicode general categories. Cn (unassigned) is 0. The order is shared with the generated
// table (tools/gen_unicode_tables.py).
enum class Category : uint8_t {
    Cn, Lu, Ll, Lt, Lm, Lo, Mn, Mc, Me, Nd, Nl, No,
    Pc, Pd, Ps, Pe, Pi, Pf, Po, Sm, Sc, Sk, So,
    Zs, Zl, Zp, Cc, Cf, Cs, Co,
};

struct CategoryRange {
    uint32_t first;
    uint32_t last;  // inclusive
    Category category;
};

struct CodePointPair {
    uint32_t from;
    uint32_t to;
};

namespace tables {
extern const CategoryRange kCategoryRanges[];
extern const size_t kCategoryRangeCount;
extern const uint32_t kWhiteSpace[];
extern const size_t kWhiteSpaceCount;
extern const CodePointPair kLowercase[];  // unicode_case_tables.cpp
extern const size_t kLowercaseCount;
extern const CodePointPair kNfdFirst[];
extern const size_t kNfdFirstCount;
}  // namespace tables

constexpr uint32_t kReplacementChar = 0xFFFD;
constexpr uint32_t kMaxCodePoint = 0x10FFFF;

Category category(uint32_t cp);
// The major class of a category: 'L', 'M', 'N', 'P', 'S', 'Z' or 'C' (Cn counts as 'C').
char major_class(Category c);
// The category named by a two-letter ("Lu") or one-letter ("L") name; false if unknown.
bool parse_category_name(std::string_view name, Category* exact, char* major);

inline bool is_letter(uint32_t cp) { return major_class(category(cp)) == 'L'; }
inline bool is_number(uint32_t cp) { return major_class(category(cp)) == 'N'; }
bool is_white_space(uint32_t cp);  // the White_Space property: what \s matches
uint32_t to_lower(uint32_t cp);     // the simple lowercase mapping (cp itself when none)
uint32_t nfd_first(uint32_t cp);    // the first code point of cp's NFD form ("é" -> "e")

// Length of the UTF-8 sequence that starts with `lead`, judged from its top bits alone
// (1 for ASCII and for stray continuation bytes). Tokenizers split text into characters
// with it, as llama.cpp does, so malformed text never stops them.
size_t utf8_sequence_length(uint8_t lead);

// Decodes UTF-8. A malformed or truncated sequence becomes U+FFFD and consumes one byte.
std::vector<uint32_t> decode_utf8(std::string_view text);
void append_utf8(std::string& out, uint32_t cp);  // cp must be <= kMaxCodePoint
std::string encode_utf8(const uint32_t* cps, size_t n);

// GPT-2's reversible byte-level encoding: every byte maps to a printable code point
// ('!'..'~', '¡'..'¬', '®'..'ÿ' map to themselves; the other 68 bytes to U+0100 upward).
uint32_t byte_to_code_point(uint8_t byte);
// The byte a code point stands for, or -1 if it is not one of the 256 mapped code points.
int code_point_to_byte(uint32_t cp);

}  // namespace vkllm::tokenizer::unicode
