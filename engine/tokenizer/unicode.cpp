#include "tokenizer/unicode.h"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace vkllm::tokenizer::unicode {

Category category(uint32_t cp) {
    const CategoryRange* begin = tables::kCategoryRanges;
    const CategoryRange* end = begin + tables::kCategoryRangeCount;
    // First range whose last >= cp.
    const CategoryRange* it =
        std::lower_bound(begin, end, cp, [](const CategoryRange& r, uint32_t v) { return r.last < v; });
    if (it != end && it->first <= cp) return it->category;
    return Category::Cn;
}

char major_class(Category c) {
    switch (c) {
        case Category::Lu: case Category::Ll: case Category::Lt: case Category::Lm: case Category::Lo:
            return 'L';
        case Category::Mn: case Category::Mc: case Category::Me:
            return 'M';
        case Category::Nd: case Category::Nl: case Category::No:
            return 'N';
        case Category::Pc: case Category::Pd: case Category::Ps: case Category::Pe:
        case Category::Pi: case Category::Pf: case Category::Po:
            return 'P';
        case Category::Sm: case Category::Sc: case Category::Sk: case Category::So:
            return 'S';
        case Category::Zs: case Category::Zl: case Category::Zp:
            return 'Z';
        default:
            return 'C';
    }
}

bool parse_category_name(std::string_view name, Category* exact, char* major) {
    static constexpr std::array<std::string_view, 30> kNames = {
        "Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No",
        "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So",
        "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co",
    };
    if (name.size() == 1 && std::string_view("LMNPSZC").find(name[0]) != std::string_view::npos) {
        *major = name[0];
        return true;
    }
    for (size_t i = 0; i < kNames.size(); ++i) {
        if (kNames[i] == name) {
            *major = 0;
            *exact = static_cast<Category>(i);
            return true;
        }
    }
    return false;
}

namespace {
uint32_t look_up(const CodePointPair* table, size_t n, uint32_t cp) {
    const CodePointPair* end = table + n;
    const CodePointPair* it =
        std::lower_bound(table, end, cp, [](const CodePointPair& p, uint32_t v) { return p.from < v; });
    return it != end && it->from == cp ? it->to : cp;
}
}  // namespace

uint32_t to_lower(uint32_t cp) { return look_up(tables::kLowercase, tables::kLowercaseCount, cp); }
uint32_t nfd_first(uint32_t cp) { return look_up(tables::kNfdFirst, tables::kNfdFirstCount, cp); }

bool is_white_space(uint32_t cp) {
    const uint32_t* end = tables::kWhiteSpace + tables::kWhiteSpaceCount;
    return std::binary_search(tables::kWhiteSpace, end, cp);
}

size_t utf8_sequence_length(uint8_t lead) {
    static constexpr uint8_t kByHighNibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return kByHighNibble[lead >> 4];
}

std::vector<uint32_t> decode_utf8(std::string_view text) {
    std::vector<uint32_t> out;
    out.reserve(text.size());
    size_t i = 0;
    auto continuation = [&](size_t k) { return i + k < text.size() && (uint8_t(text[i + k]) & 0xC0) == 0x80; };
    while (i < text.size()) {
        const uint8_t b = uint8_t(text[i]);
        if (b < 0x80) {
            out.push_back(b);
            i += 1;
        } else if ((b & 0xE0) == 0xC0 && continuation(1)) {
            out.push_back(((b & 0x1Fu) << 6) | (uint8_t(text[i + 1]) & 0x3Fu));
            i += 2;
        } else if ((b & 0xF0) == 0xE0 && continuation(1) && continuation(2)) {
            out.push_back(((b & 0x0Fu) << 12) | ((uint8_t(text[i + 1]) & 0x3Fu) << 6) | (uint8_t(text[i + 2]) & 0x3Fu));
            i += 3;
        } else if ((b & 0xF8) == 0xF0 && continuation(1) && continuation(2) && continuation(3)) {
            const uint32_t cp = ((b & 0x07u) << 18) | ((uint8_t(text[i + 1]) & 0x3Fu) << 12) |
                                ((uint8_t(text[i + 2]) & 0x3Fu) << 6) | (uint8_t(text[i + 3]) & 0x3Fu);
            out.push_back(cp <= kMaxCodePoint ? cp : kReplacementChar);
            i += 4;
        } else {
            out.push_back(kReplacementChar);
            i += 1;
        }
    }
    return out;
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp <= 0x7F) {
        out.push_back(char(cp));
    } else if (cp <= 0x7FF) {
        out.push_back(char(0xC0 | (cp >> 6)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    } else if (cp <= 0xFFFF) {
        out.push_back(char(0xE0 | (cp >> 12)));
        out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    } else if (cp <= kMaxCodePoint) {
        out.push_back(char(0xF0 | (cp >> 18)));
        out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    } else {
        throw std::invalid_argument("code point out of range: " + std::to_string(cp));
    }
}

std::string encode_utf8(const uint32_t* cps, size_t n) {
    std::string out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) append_utf8(out, cps[i]);
    return out;
}

namespace {

struct ByteMap {
    std::array<uint32_t, 256> to_cp{};
    std::array<int16_t, 324> from_cp{};  // every mapped code point is below 256 + 68

    ByteMap() {
        from_cp.fill(-1);
        auto printable = [](int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); };
        uint32_t next = 256;
        for (int b = 0; b < 256; ++b) {
            to_cp[b] = printable(b) ? uint32_t(b) : next++;
            from_cp[to_cp[b]] = int16_t(b);
        }
    }
};

const ByteMap& byte_map() {
    static const ByteMap map;
    return map;
}

}  // namespace

uint32_t byte_to_code_point(uint8_t byte) { return byte_map().to_cp[byte]; }

int code_point_to_byte(uint32_t cp) {
    const ByteMap& m = byte_map();
    return cp < m.from_cp.size() ? m.from_cp[cp] : -1;
}

}  // namespace vkllm::tokenizer::unicode
