#include "template/strings.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "template/budget.h"
#include "template/builtins_util.h"

namespace vkllm::jinja {

std::string html_escape(const std::string& s) {
    // The escaped size first: an escape is up to five bytes for one.
    uint64_t size = s.size();
    for (char c : s) size += c == '&' || c == '"' || c == '\'' ? 4 : c == '<' || c == '>' ? 3 : 0;
    check_string_size(size);
    charge(add_sat(size, s.size()));
    std::string out;
    out.reserve(size_t(size));
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

namespace {

// Case mapping of ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic letters (what chat
// templates meet); other characters are left as they are.
// Latin Extended-A pairs letters as (upper, lower) = (even, odd), except in two runs where
// the upper case letter is the odd one.
bool latin_a(char32_t c) { return c >= 0x100 && c <= 0x17e && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 && c != 0x178; }
bool latin_a_upper(char32_t c) {
    bool odd_is_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e);
    return (c % 2 == 1) == odd_is_upper;
}

char32_t to_upper(char32_t c) {
    if (c >= 'a' && c <= 'z') return c - 32;
    if ((c >= 0xe0 && c <= 0xfe && c != 0xf7) || (c >= 0x3b1 && c <= 0x3cb && c != 0x3c2) || (c >= 0x430 && c <= 0x44f))
        return c - 32;
    if (c >= 0x450 && c <= 0x45f) return c - 80;
    if (c == 0x3c2) return 0x3a3;                              // final sigma
    if (c == 0x3ac) return 0x386;                              // Greek letters with tonos
    if (c >= 0x3ad && c <= 0x3af) return c - 37;
    if (c == 0x3cc) return 0x38c;
    if (c == 0x3cd || c == 0x3ce) return c - 63;
    if (c == 0xff) return 0x178;
    if (c == 0xb5) return 0x39c;                               // micro sign -> Greek capital mu
    if (c == 0x131 || c == 0x17f) return c == 0x131 ? 'I' : 'S';  // dotless i, long s
    if (latin_a(c) && !latin_a_upper(c)) return c - 1;
    return c;
}
char32_t to_lower(char32_t c) {
    if (c >= 'A' && c <= 'Z') return c + 32;
    if ((c >= 0xc0 && c <= 0xde && c != 0xd7) || (c >= 0x391 && c <= 0x3ab && c != 0x3a2) || (c >= 0x410 && c <= 0x42f))
        return c + 32;
    if (c >= 0x400 && c <= 0x40f) return c + 80;
    if (c == 0x386) return 0x3ac;
    if (c >= 0x388 && c <= 0x38a) return c + 37;
    if (c == 0x38c) return 0x3cc;
    if (c == 0x38e || c == 0x38f) return c + 63;
    if (c == 0x178) return 0xff;
    if (latin_a(c) && latin_a_upper(c)) return c + 1;
    return c;
}
bool is_letter(char32_t c) {  // cased: has another case, or is one of the letters whose case is odd
    return to_upper(c) != c || to_lower(c) != c || c == 0xdf || c == 0x130 || c == 0x138 || c == 0x149 || c == 0x390 || c == 0x3b0;
}

// One character's upper, title and lower case: usually one character, a few become two or three.
std::u32string upper_of(char32_t c) {
    switch (c) {
        case 0xdf: return U"SS";
        case 0x149: return U"\u02bcN";
        case 0x390: return U"\u0399\u0308\u0301";
        case 0x3b0: return U"\u03a5\u0308\u0301";
        default: return std::u32string(1, to_upper(c));
    }
}
std::u32string title_of(char32_t c) { return c == 0xdf ? U"Ss" : upper_of(c); }
std::u32string lower_of(char32_t c) { return c == 0x130 ? U"i\u0307" : std::u32string(1, to_lower(c)); }

// Appends code points as UTF-8, checking the string limit as the text grows (case mapping
// can make a text up to three times longer).
void put(std::string& out, const std::u32string& cps) {
    for (char32_t c : cps) {
        if (out.size() + 4 > limits::kMaxStringBytes) check_string_size(out.size() + utf8_width(c));
        append_utf8(out, c);
    }
}

// `full` maps a character to one or more; `ascii` is the same map on ASCII, where it is one
// to one (the common case, taken without building a string per character).
std::string map_case(const std::string& s, std::u32string (*full)(char32_t), char32_t (*ascii)(char32_t)) {
    std::string out;
    out.reserve(s.size());
    for (char32_t c : decode_utf8(s)) {
        if (c >= 0x80) {
            put(out, full(c));
        } else {
            if (out.size() >= limits::kMaxStringBytes) check_string_size(out.size() + 1);
            out += char(ascii(c));
        }
    }
    charge(out.size());
    return out;
}

}  // namespace

std::string upper(const std::string& s) { return map_case(s, upper_of, to_upper); }
std::string lower(const std::string& s) { return map_case(s, lower_of, to_lower); }

std::string capitalize(const std::string& s) {
    std::u32string u = decode_utf8(s);
    std::string out;
    for (size_t i = 0; i < u.size(); ++i) put(out, i ? lower_of(u[i]) : title_of(u[i]));
    charge(out.size());
    return out;
}

// str.title(): the first letter of every run of letters upper case, the rest lower case.
std::string py_title(const std::string& s) {
    std::string out;
    bool prev_letter = false;
    for (char32_t c : decode_utf8(s)) {
        bool letter = is_letter(c);
        put(out, !letter ? std::u32string(1, c) : prev_letter ? lower_of(c) : title_of(c));
        prev_letter = letter;
    }
    charge(out.size());
    return out;
}

// jinja2's title filter: words split at whitespace, '-', '(', '{', '[' and '<'.
std::string jinja_title(const std::string& s) {
    std::string out;
    bool word_start = true;
    for (char32_t c : decode_utf8(s)) {
        bool sep = is_py_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
        put(out, sep ? std::u32string(1, c) : word_start ? upper_of(c) : lower_of(c));  // item[0].upper() + item[1:].lower()
        word_start = sep;
    }
    charge(out.size());
    return out;
}

// str.strip/lstrip/rstrip: whitespace, or any of `chars`.
std::string strip(const std::string& s, const Value* chars, bool left, bool right) {
    std::u32string u = decode_utf8(s), set;
    bool by_set = chars && !chars->is_none();
    if (by_set) {
        // Sorted, so that a long `chars` costs a binary search per character, not a scan.
        set = decode_utf8(as_string(*chars, "strip arg"));
        std::sort(set.begin(), set.end());
    }
    auto drop = [&](char32_t c) { return by_set ? std::binary_search(set.begin(), set.end(), c) : is_py_space(c); };
    size_t b = 0, e = u.size();
    if (left) while (b < e && drop(u[b])) ++b;
    if (right) while (e > b && drop(u[e - 1])) --e;
    return encode_utf8(u.substr(b, e - b));
}

List split(const std::string& s, const Value* sep, int64_t maxsplit, bool from_right) {
    List out;
    if (!sep || sep->is_none()) {  // runs of whitespace, no empty strings
        std::u32string u = decode_utf8(s);
        std::vector<std::u32string> words;
        if (!from_right) {
            size_t i = 0;
            while (true) {
                while (i < u.size() && is_py_space(u[i])) ++i;
                if (i >= u.size()) break;
                check_list_size(words.size() + 1);
                if (maxsplit >= 0 && int64_t(words.size()) == maxsplit) {
                    size_t e = u.size();
                    while (e > i && is_py_space(u[e - 1])) --e;
                    words.push_back(u.substr(i, e - i));
                    break;
                }
                size_t j = i;
                while (j < u.size() && !is_py_space(u[j])) ++j;
                words.push_back(u.substr(i, j - i));
                i = j;
            }
        } else {
            size_t i = u.size();
            while (true) {
                while (i > 0 && is_py_space(u[i - 1])) --i;
                if (i == 0) break;
                check_list_size(words.size() + 1);
                if (maxsplit >= 0 && int64_t(words.size()) == maxsplit) {
                    size_t b = 0;
                    while (b < i && is_py_space(u[b])) ++b;
                    words.push_back(u.substr(b, i - b));
                    break;
                }
                size_t j = i;
                while (j > 0 && !is_py_space(u[j - 1])) --j;
                words.push_back(u.substr(j, i - j));
                i = j;
            }
            std::reverse(words.begin(), words.end());
        }
        charge(words.size() * limits::kValueWork);
        for (auto& w : words) out.push_back(Value::from(encode_utf8(w)));
        return out;
    }
    const std::string& d = as_string(*sep, "separator");
    if (d.empty()) type_error("empty separator");
    charge_search(s.size(), d.size());
    std::vector<std::string> parts;
    if (!from_right) {
        size_t start = 0;
        while (true) {
            size_t p = s.find(d, start);
            if (p == std::string::npos || (maxsplit >= 0 && int64_t(parts.size()) == maxsplit)) break;
            check_list_size(parts.size() + 2);
            parts.push_back(s.substr(start, p - start));
            start = p + d.size();
        }
        parts.push_back(s.substr(start));
    } else {
        size_t end = s.size();
        while (true) {
            size_t p = end >= d.size() ? s.rfind(d, end - d.size()) : std::string::npos;
            if (p == std::string::npos || (maxsplit >= 0 && int64_t(parts.size()) == maxsplit)) break;
            check_list_size(parts.size() + 2);
            parts.push_back(s.substr(p + d.size(), end - p - d.size()));
            end = p;
        }
        parts.push_back(s.substr(0, end));
        std::reverse(parts.begin(), parts.end());
    }
    charge(add_sat(s.size(), parts.size() * limits::kValueWork));
    for (auto& p : parts) out.push_back(Value::from(std::move(p)));
    return out;
}

// str.replace. The result's size is known before it is built: the replacements are counted
// first (Python inserts `to` before every character and at the end when `from` is empty).
std::string replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
    const uint64_t limit = count < 0 ? UINT64_MAX : uint64_t(count);
    if (from.empty()) {
        const std::u32string u = decode_utf8(s);
        const uint64_t n = std::min<uint64_t>(limit, uint64_t(u.size()) + 1);
        const uint64_t size = add_sat(s.size(), mul_sat(n, to.size()));
        check_string_size(size);
        charge_string(size);
        std::string out;
        out.reserve(size_t(size));
        size_t done = 0;
        for (size_t i = 0; i <= u.size(); ++i) {
            if (done < n) { out += to; ++done; }
            if (i < u.size()) append_utf8(out, u[i]);
        }
        return out;
    }
    charge_search(s.size(), from.size());
    std::vector<size_t> at;  // where the replaced occurrences start
    for (size_t p = s.find(from); p != std::string::npos && at.size() < limit; p = s.find(from, p + from.size()))
        at.push_back(p);
    // s.size() - |at| * from.size() + |at| * to.size(), without going below zero on the way.
    const uint64_t size = add_sat(s.size() - at.size() * from.size(), mul_sat(at.size(), to.size()));
    check_string_size(size);
    charge_string(size);
    std::string out;
    out.reserve(size_t(size));
    size_t start = 0;
    for (size_t p : at) {
        out.append(s, start, p - start);
        out += to;
        start = p + from.size();
    }
    out.append(s, start, std::string::npos);
    return out;
}

// str.splitlines() (without keepends).
std::vector<std::string> splitlines(const std::string& s) {
    std::u32string u = decode_utf8(s);
    std::vector<std::string> lines;
    std::u32string cur;
    for (size_t i = 0; i < u.size(); ++i) {
        char32_t c = u[i];
        bool brk = c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || c == 0x1c || c == 0x1d || c == 0x1e ||
                   c == 0x85 || c == 0x2028 || c == 0x2029;
        if (!brk) { cur += c; continue; }
        if (c == '\r' && i + 1 < u.size() && u[i + 1] == '\n') ++i;
        check_list_size(lines.size() + 1);
        lines.push_back(encode_utf8(cur));
        cur.clear();
    }
    if (!cur.empty()) lines.push_back(encode_utf8(cur));
    return lines;
}

namespace {

bool affix_match(const std::string& s, const Value& affix, bool prefix) {
    auto one = [&](const std::string& a) {
        charge(limits::kValueWork + std::min(a.size(), s.size()));
        if (a.size() > s.size()) return false;
        return prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0;
    };
    if (affix.is_list()) {
        for (const auto& a : *affix.list)
            if (one(as_string(a, "startswith first arg"))) return true;
        return false;
    }
    return one(as_string(affix, "startswith first arg"));
}

// str.format with "{}", "{0}" and "{name}" fields (no format specs).
std::string format(const std::string& fmt, const Args& args) {
    std::string out;
    charge(fmt.size());
    size_t auto_index = 0;
    for (size_t i = 0; i < fmt.size(); ++i) {
        char c = fmt[i];
        if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') { append_checked(out, 1, '{'); ++i; continue; }
        if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') { append_checked(out, 1, '}'); ++i; continue; }
        if (c != '{') {
            // The text up to the next brace in one piece.
            const size_t next = std::min(fmt.find_first_of("{}", i + 1), fmt.size());
            append_checked(out, std::string_view(fmt).substr(i, next - i));
            i = next - 1;
            continue;
        }
        size_t close = fmt.find('}', i);
        if (close == std::string::npos) type_error("Single '{' encountered in format string");
        std::string field = fmt.substr(i + 1, close - i - 1);
        if (field.find(':') != std::string::npos || field.find('!') != std::string::npos)
            type_error("format specs in str.format are not supported: {" + field + "}");
        const Value* v = nullptr;
        if (field.empty()) {
            v = auto_index < args.positional.size() ? &args.positional[auto_index] : nullptr;
            ++auto_index;
        } else if (std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
            // An index too long for a number is out of range as well.
            const size_t k = field.size() > 9 ? SIZE_MAX : std::stoul(field);
            v = k < args.positional.size() ? &args.positional[k] : nullptr;
        } else {
            v = args.keyword(field);
        }
        if (!v) type_error("Replacement index " + field + " out of range for positional args tuple");
        append_checked(out, to_str(*v));
        i = close;
    }
    return out;
}

const std::set<std::string> kStrMethods = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "replace", "startswith", "endswith", "upper",
    "lower", "title", "capitalize", "find", "rfind", "index", "count", "join", "format", "isdigit", "isalpha",
    "isalnum", "isspace", "isupper", "islower"};

}  // namespace

bool is_str_method(const std::string& name) { return kStrMethods.count(name) > 0; }

Value call_str_method(const std::string& s, const std::string& name, const Args& a) {
    if (name == "strip") return Value::from(strip(s, a.get(0, "chars"), true, true));
    if (name == "lstrip") return Value::from(strip(s, a.get(0, "chars"), true, false));
    if (name == "rstrip") return Value::from(strip(s, a.get(0, "chars"), false, true));
    if (name == "split" || name == "rsplit") {
        const Value* m = a.get(1, "maxsplit");
        return Value::from(split(s, a.get(0, "sep"), m ? as_int(*m, "maxsplit") : -1, name == "rsplit"));
    }
    if (name == "splitlines") {
        List l;
        for (auto& line : splitlines(s)) l.push_back(Value::from(line));
        return Value::from(std::move(l));
    }
    if (name == "replace") {
        if (a.positional.size() < 2) type_error("replace expected at least 2 arguments");
        const Value* n = a.get(2, "count");
        return Value::from(replace(s, as_string(a.positional[0], "replace arg"), as_string(a.positional[1], "replace arg"),
                                   n ? as_int(*n, "count") : -1));
    }
    if (name == "startswith" || name == "endswith") {
        if (a.positional.empty()) type_error(name + " takes at least 1 argument");
        return Value::from(affix_match(s, a.positional[0], name == "startswith"));
    }
    if (name == "upper") return Value::from(upper(s));
    if (name == "lower") return Value::from(lower(s));
    if (name == "title") return Value::from(py_title(s));
    if (name == "capitalize") return Value::from(capitalize(s));
    if (name == "find" || name == "rfind" || name == "index") {
        if (a.positional.empty()) type_error(name + " takes at least 1 argument");
        const std::string& sub = as_string(a.positional[0], "substring");
        charge_search(s.size(), sub.size());
        size_t p = name == "rfind" ? s.rfind(sub) : s.find(sub);
        if (p == std::string::npos) {
            if (name == "index") type_error("substring not found");
            return Value::from(int64_t(-1));
        }
        return Value::from(int64_t(decode_utf8(s.substr(0, p)).size()));
    }
    if (name == "count") {
        if (a.positional.empty()) type_error("count takes at least 1 argument");
        const std::string& sub = as_string(a.positional[0], "substring");
        if (sub.empty()) return Value::from(int64_t(decode_utf8(s).size()) + 1);
        charge_search(s.size(), sub.size());
        int64_t n = 0;
        for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
        return Value::from(n);
    }
    if (name == "join") {
        if (a.positional.empty()) type_error("join takes exactly one argument");
        const List items = iterate(a.positional[0]);
        // The result's size before it is built (the items are strings already).
        uint64_t size = items.empty() ? 0 : mul_sat(items.size() - 1, s.size());
        check_string_size(size);
        for (const auto& x : items) size = add_sat(size, as_string(x, "sequence item").size());
        check_string_size(size);
        charge_string(size);
        std::string out;
        out.reserve(size_t(size));
        for (size_t i = 0; i < items.size(); ++i) {
            if (i) out += s;
            out += items[i].string();
        }
        return Value::from(std::move(out));
    }
    if (name == "format") return Value::from(format(s, a));
    auto all = [&](auto pred) {
        std::u32string u = decode_utf8(s);
        return Value::from(!u.empty() && std::all_of(u.begin(), u.end(), pred));
    };
    if (name == "isdigit") return all([](char32_t c) { return c >= '0' && c <= '9'; });
    if (name == "isalpha") return all([](char32_t c) { return c < 0x80 && std::isalpha(int(c)); });
    if (name == "isalnum") return all([](char32_t c) { return c < 0x80 && std::isalnum(int(c)); });
    if (name == "isspace") return all([](char32_t c) { return is_py_space(c); });
    if (name == "isupper") return Value::from(s != lower(s) && s == upper(s));
    if (name == "islower") return Value::from(s != upper(s) && s == lower(s));
    type_error("'str' object has no attribute '" + name + "'");
}


}  // namespace vkllm::jinja
