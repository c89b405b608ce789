#include "template/builtins.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

namespace vkllm::jinja {

namespace {

[[noreturn]] void type_error(const std::string& message) { throw Error(message); }

// markupsafe's escape(): what a string marked safe does to a plain string added to it.
std::string html_escape(const std::string& s) {
    std::string out;
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

// A string result that stays "safe" (a markupsafe.Markup) when the string it came from was.
Value keep_safe(const Value& from, Value result) {
    if (from.safe && result.is_string()) result.safe = true;
    return result;
}

int64_t as_int(const Value& v, const char* what) {
    if (v.kind == Kind::Int) return v.integer;
    if (v.kind == Kind::Bool) return v.boolean;
    if (v.is_undefined()) fail_undefined(v);
    type_error(std::string(what) + " must be an integer, not " + type_name(v));
}

double as_double(const Value& v) {
    if (v.kind == Kind::Float) return v.real;
    if (v.kind == Kind::Int) return double(v.integer);
    if (v.kind == Kind::Bool) return v.boolean;
    if (v.is_undefined()) fail_undefined(v);
    type_error("unsupported operand type: '" + type_name(v) + "'");
}

const std::string& as_string(const Value& v, const char* what) {
    if (v.is_string()) return v.string;
    if (v.is_undefined()) fail_undefined(v);
    type_error(std::string(what) + " must be str, not " + type_name(v));
}

bool arg_bool(const Args& a, size_t i, const char* name, bool def) {
    const Value* v = a.get(i, name);
    return v ? truthy(*v) : def;
}

// ---- strings ----

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

std::string map_case(const std::string& s, std::u32string (*f)(char32_t)) {
    std::u32string out;
    for (char32_t c : decode_utf8(s)) out += f(c);
    return encode_utf8(out);
}
std::string upper(const std::string& s) { return map_case(s, upper_of); }
std::string lower(const std::string& s) { return map_case(s, lower_of); }

std::string capitalize(const std::string& s) {
    std::u32string u = decode_utf8(s), out;
    for (size_t i = 0; i < u.size(); ++i) out += i ? lower_of(u[i]) : title_of(u[i]);
    return encode_utf8(out);
}

// str.title(): the first letter of every run of letters upper case, the rest lower case.
std::string py_title(const std::string& s) {
    std::u32string out;
    bool prev_letter = false;
    for (char32_t c : decode_utf8(s)) {
        bool letter = is_letter(c);
        out += !letter ? std::u32string(1, c) : prev_letter ? lower_of(c) : title_of(c);
        prev_letter = letter;
    }
    return encode_utf8(out);
}

// jinja2's title filter: words split at whitespace, '-', '(', '{', '[' and '<'.
std::string jinja_title(const std::string& s) {
    std::u32string out;
    bool word_start = true;
    for (char32_t c : decode_utf8(s)) {
        bool sep = is_py_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
        out += sep ? std::u32string(1, c) : word_start ? upper_of(c) : lower_of(c);  // item[0].upper() + item[1:].lower()
        word_start = sep;
    }
    return encode_utf8(out);
}

// str.strip/lstrip/rstrip: whitespace, or any of `chars`.
std::string strip(const std::string& s, const Value* chars, bool left, bool right) {
    std::u32string u = decode_utf8(s), set;
    bool by_set = chars && !chars->is_none();
    if (by_set) set = decode_utf8(as_string(*chars, "strip arg"));
    auto drop = [&](char32_t c) { return by_set ? set.find(c) != std::u32string::npos : is_py_space(c); };
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
        for (auto& w : words) out.push_back(Value::from(encode_utf8(w)));
        return out;
    }
    const std::string& d = as_string(*sep, "separator");
    if (d.empty()) type_error("empty separator");
    std::vector<std::string> parts;
    if (!from_right) {
        size_t start = 0;
        while (true) {
            size_t p = s.find(d, start);
            if (p == std::string::npos || (maxsplit >= 0 && int64_t(parts.size()) == maxsplit)) break;
            parts.push_back(s.substr(start, p - start));
            start = p + d.size();
        }
        parts.push_back(s.substr(start));
    } else {
        size_t end = s.size();
        while (true) {
            size_t p = end >= d.size() ? s.rfind(d, end - d.size()) : std::string::npos;
            if (p == std::string::npos || (maxsplit >= 0 && int64_t(parts.size()) == maxsplit)) break;
            parts.push_back(s.substr(p + d.size(), end - p - d.size()));
            end = p;
        }
        parts.push_back(s.substr(0, end));
        std::reverse(parts.begin(), parts.end());
    }
    for (auto& p : parts) out.push_back(Value::from(p));
    return out;
}

std::string replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
    std::string out;
    if (from.empty()) {  // Python inserts `to` around every character
        std::u32string u = decode_utf8(s);
        int64_t n = 0;
        for (size_t i = 0; i <= u.size(); ++i) {
            if (count < 0 || n < count) { out += to; ++n; }
            if (i < u.size()) out += encode_utf8(u.substr(i, 1));
        }
        return out;
    }
    size_t start = 0;
    int64_t n = 0;
    while (count < 0 || n < count) {
        size_t p = s.find(from, start);
        if (p == std::string::npos) break;
        out += s.substr(start, p - start) + to;
        start = p + from.size();
        ++n;
    }
    return out + s.substr(start);
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
        lines.push_back(encode_utf8(cur));
        cur.clear();
    }
    if (!cur.empty()) lines.push_back(encode_utf8(cur));
    return lines;
}

bool affix_match(const std::string& s, const Value& affix, bool prefix) {
    auto one = [&](const std::string& a) {
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
    size_t auto_index = 0;
    for (size_t i = 0; i < fmt.size(); ++i) {
        char c = fmt[i];
        if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') { out += '{'; ++i; continue; }
        if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') { out += '}'; ++i; continue; }
        if (c != '{') { out += c; continue; }
        size_t close = fmt.find('}', i);
        if (close == std::string::npos) type_error("Single '{' encountered in format string");
        std::string field = fmt.substr(i + 1, close - i - 1);
        if (field.find(':') != std::string::npos || field.find('!') != std::string::npos)
            type_error("format specs in str.format are not supported: {" + field + "}");
        const Value* v = nullptr;
        if (field.empty()) {
            v = auto_index < args.positional.size() ? &args.positional[auto_index] : nullptr;
            ++auto_index;
        } else if (std::isdigit(static_cast<unsigned char>(field[0]))) {
            size_t k = std::stoul(field);
            v = k < args.positional.size() ? &args.positional[k] : nullptr;
        } else {
            v = args.keyword(field);
        }
        if (!v) type_error("Replacement index " + field + " out of range for positional args tuple");
        out += to_str(*v);
        i = close;
    }
    return out;
}

int64_t py_len(const Value& v) {
    switch (v.kind) {
        case Kind::Undefined: return 0;
        case Kind::String: return int64_t(decode_utf8(v.string).size());
        case Kind::List:
            if (v.generator) type_error("object of type 'generator' has no len()");
            return int64_t(v.list->size());
        case Kind::Dict: return int64_t(v.dict->items.size());
        default: type_error("object of type '" + type_name(v) + "' has no len()");
    }
}

// ---- methods ----

const std::set<std::string> kStrMethods = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "replace", "startswith", "endswith", "upper",
    "lower", "title", "capitalize", "find", "rfind", "index", "count", "join", "format", "isdigit", "isalpha",
    "isalnum", "isspace", "isupper", "islower"};
const std::set<std::string> kDictMethods = {"get", "items", "keys", "values"};
const std::set<std::string> kListMethods = {"index", "count"};
// Methods that would change a list or dict: HF's ImmutableSandboxedEnvironment forbids them.
const std::set<std::string> kUnsafeList = {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"};
const std::set<std::string> kUnsafeDict = {"clear", "pop", "popitem", "setdefault", "update"};

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
        int64_t n = 0;
        for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
        return Value::from(n);
    }
    if (name == "join") {
        if (a.positional.empty()) type_error("join takes exactly one argument");
        std::string out;
        bool first = true;
        for (const auto& x : iterate(a.positional[0])) {
            out += (first ? "" : s) + as_string(x, "sequence item");
            first = false;
        }
        return Value::from(out);
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

Value pairs(const Dict& d) {
    List l;
    for (const auto& [k, v] : d.items) l.push_back(Value::pair(k, v));
    return Value::from(std::move(l));
}

Value call_dict_method(const Value& self, const std::string& name, const Args& a) {
    const Dict& d = *self.dict;
    if (name == "get") {
        if (a.positional.empty()) type_error("get expected at least 1 argument");
        const Value* def = a.get(1, "default");
        const Value* v = d.find(a.positional[0]);
        return v ? *v : def ? *def : Value::none();
    }
    if (name == "items") return pairs(d);
    List l;
    for (const auto& [k, v] : d.items) l.push_back(name == "keys" ? k : v);
    return Value::from(std::move(l));
}

Value call_list_method(const Value& self, const std::string& name, const Args& a) {
    if (a.positional.empty()) type_error(name + " takes exactly one argument");
    int64_t n = 0;
    for (size_t i = 0; i < self.list->size(); ++i) {
        if (equals((*self.list)[i], a.positional[0])) {
            if (name == "index") return Value::from(int64_t(i));
            ++n;
        }
    }
    if (name == "index") type_error(repr(a.positional[0]) + " is not in list");
    return Value::from(n);
}

Value method(const Value& self, const std::string& name) {
    return Value::function(name, [self, name](const Args& a) -> Value {
        if (self.is_string()) return keep_safe(self, call_str_method(self.string, name, a));
        if (self.is_dict()) return call_dict_method(self, name, a);
        return call_list_method(self, name, a);
    });
}

Value unsafe(const std::string& type, const std::string& name) {
    return Value::function(name, [type, name](const Args&) -> Value {
        throw Error("access to attribute '" + name + "' of '" + type + "' object is unsafe.");
    });
}

std::string object_name(const Value& v) {
    if (v.is_none()) return "None";
    if (v.kind == Kind::Namespace) return "jinja2.utils.Namespace object";
    return type_name(v) + " object";
}

Value missing_attr(const Value& obj, const std::string& name) {
    return Value::undefined("'" + object_name(obj) + "' has no attribute '" + name + "'");
}

}  // namespace

Value get_attr(const Value& obj, const std::string& name) {
    switch (obj.kind) {
        case Kind::Undefined: fail_undefined(obj);
        case Kind::String:
            if (kStrMethods.count(name)) return method(obj, name);
            break;
        case Kind::Dict:
            if (kDictMethods.count(name)) return method(obj, name);
            if (kUnsafeDict.count(name)) return unsafe("dict", name);
            if (const Value* v = obj.dict->find(name)) return *v;
            break;
        case Kind::Namespace:
            if (const Value* v = obj.dict->find(name)) return *v;
            break;
        case Kind::List:
            if (obj.generator) break;
            if (kListMethods.count(name)) return method(obj, name);
            if (kUnsafeList.count(name)) return unsafe("list", name);
            break;
        default: break;
    }
    return missing_attr(obj, name);
}

Value get_item(const Value& obj, const Value& key) {
    if (obj.is_undefined()) fail_undefined(obj);
    if (obj.is_dict()) {
        if (const Value* v = obj.dict->find(key)) return *v;
    } else if ((obj.is_list() && !obj.generator) || obj.is_string()) {
        if (key.kind == Kind::Int || key.kind == Kind::Bool) {
            int64_t i = key.kind == Kind::Bool ? key.boolean : key.integer;
            if (obj.is_list()) {
                int64_t n = int64_t(obj.list->size());
                if (i < 0) i += n;
                if (i >= 0 && i < n) return (*obj.list)[size_t(i)];
            } else {
                std::u32string u = decode_utf8(obj.string);
                int64_t n = int64_t(u.size());
                if (i < 0) i += n;
                if (i >= 0 && i < n) return Value::from(encode_utf8(u.substr(size_t(i), 1)));
            }
        }
    }
    if (key.is_string()) return get_attr(obj, key.string);
    return Value::undefined(object_name(obj) + " has no element " + repr(key));
}

Value slice(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
    if (obj.is_undefined()) fail_undefined(obj);
    int64_t step = step_v.is_none() || step_v.is_undefined() ? 1 : as_int(step_v, "slice step");
    if (step == 0) type_error("slice step cannot be zero");
    std::u32string u;
    int64_t n;
    if (obj.is_string()) {
        u = decode_utf8(obj.string);
        n = int64_t(u.size());
    } else if (obj.is_list() && !obj.generator) {
        n = int64_t(obj.list->size());
    } else {  // jinja2's getitem turns the TypeError into an undefined value
        return Value::undefined("'" + type_name(obj) + "' object is not subscriptable");
    }
    // Python's slice.indices(n).
    auto bound = [&](const Value& v, int64_t def) -> int64_t {
        if (v.is_none() || v.is_undefined()) return def;
        int64_t i = as_int(v, "slice index");
        if (i < 0) {
            i += n;
            if (i < 0) i = step < 0 ? -1 : 0;
        } else if (i >= n) {
            i = step < 0 ? n - 1 : n;
        }
        return i;
    };
    int64_t start = bound(start_v, step < 0 ? n - 1 : 0), stop = bound(stop_v, step < 0 ? -1 : n);
    std::vector<int64_t> idx;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) idx.push_back(i);
    if (obj.is_string()) {
        std::u32string out;
        for (int64_t i : idx) out += u[size_t(i)];
        return Value::from(encode_utf8(out));
    }
    List out;
    for (int64_t i : idx) out.push_back((*obj.list)[size_t(i)]);
    Value v = Value::from(std::move(out));
    v.tuple = obj.tuple;
    return v;
}

bool contains(const Value& c, const Value& item) {
    switch (c.kind) {
        case Kind::Undefined: return false;
        case Kind::String:
            if (!item.is_string()) type_error("'in <string>' requires string as left operand, not " + type_name(item));
            return c.string.find(item.string) != std::string::npos;
        case Kind::List:
            for (const auto& x : *c.list)
                if (equals(x, item)) return true;
            return false;
        case Kind::Dict: case Kind::Namespace:
            return c.dict->find(item) != nullptr;
        default: type_error("argument of type '" + type_name(c) + "' is not iterable");
    }
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
    if (a.is_undefined()) fail_undefined(a);
    if (b.is_undefined()) fail_undefined(b);
    auto unsupported = [&]() -> Value {
        type_error("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
    };
    if (op == "+") {
        if (a.is_string()) {
            if (!b.is_string()) type_error("can only concatenate str (not \"" + type_name(b) + "\") to str");
            if (!a.safe && !b.safe) return Value::from(a.string + b.string);
            // Markup + str escapes the plain side (HTML), and the result is Markup.
            Value v = Value::from((a.safe ? a.string : html_escape(a.string)) + (b.safe ? b.string : html_escape(b.string)));
            v.safe = true;
            return v;
        }
        if (a.is_list() && !a.generator) {
            if (!b.is_list() || b.generator || a.tuple != b.tuple)
                type_error("can only concatenate " + type_name(a) + " (not \"" + type_name(b) + "\") to " + type_name(a));
            List l = *a.list;
            l.insert(l.end(), b.list->begin(), b.list->end());
            return Value::from(std::move(l));
        }
    }
    if (op == "*") {
        const Value* seq = a.is_string() || a.is_list() ? &a : b.is_string() || b.is_list() ? &b : nullptr;
        if (seq) {
            const Value& n = seq == &a ? b : a;
            if (n.kind != Kind::Int && n.kind != Kind::Bool) return unsupported();
            int64_t k = std::max<int64_t>(0, n.kind == Kind::Bool ? n.boolean : n.integer);
            if (seq->is_string()) {
                std::string out;
                for (int64_t i = 0; i < k; ++i) out += seq->string;
                return Value::from(out);
            }
            List l;
            for (int64_t i = 0; i < k; ++i) l.insert(l.end(), seq->list->begin(), seq->list->end());
            return Value::from(std::move(l));
        }
    }
    if (op == "%" && a.is_string()) {  // printf-style "%s"/"%d" with one value or a list of them
        List vals = b.is_list() ? *b.list : List{b};
        std::string out;
        size_t k = 0;
        for (size_t i = 0; i < a.string.size(); ++i) {
            char c = a.string[i];
            if (c != '%' || i + 1 >= a.string.size()) { out += c; continue; }
            char f = a.string[++i];
            if (f == '%') { out += '%'; continue; }
            if (k >= vals.size()) type_error("not enough arguments for format string");
            const Value& v = vals[k++];
            if (f == 's') out += to_str(v);
            else if (f == 'r') out += repr(v);
            else if (f == 'd' || f == 'i') out += std::to_string(int64_t(as_double(v)));
            else type_error(std::string("unsupported format character '") + f + "'");
        }
        if (k < vals.size()) type_error("not all arguments converted during string formatting");
        return Value::from(out);
    }
    if (!a.is_number() || !b.is_number()) return unsupported();
    bool ints = a.kind != Kind::Float && b.kind != Kind::Float;
    if (ints) {
        int64_t x = a.kind == Kind::Bool ? a.boolean : a.integer, y = b.kind == Kind::Bool ? b.boolean : b.integer;
        if (op == "+") return Value::from(x + y);
        if (op == "-") return Value::from(x - y);
        if (op == "*") return Value::from(x * y);
        if (op == "/") {
            if (y == 0) type_error("division by zero");
            return Value::from(double(x) / double(y));
        }
        if (op == "//" || op == "%") {
            if (y == 0) type_error("integer division or modulo by zero");
            int64_t q = x / y, r = x % y;
            if (r != 0 && ((r < 0) != (y < 0))) { q -= 1; r += y; }  // Python floors
            return Value::from(op == "//" ? q : r);
        }
        if (op == "**") {
            if (y < 0 && x == 0) type_error("0.0 cannot be raised to a negative power");
            if (y < 0) return Value::from(std::pow(double(x), double(y)));
            int64_t p = 1;
            for (int64_t i = 0; i < y; ++i) p *= x;
            return Value::from(p);
        }
    }
    double x = as_double(a), y = as_double(b);
    if (op == "+") return Value::from(x + y);
    if (op == "-") return Value::from(x - y);
    if (op == "*") return Value::from(x * y);
    if (op == "/") {
        if (y == 0) type_error("float division by zero");
        return Value::from(x / y);
    }
    if (op == "//" || op == "%") {
        if (y == 0) type_error("float modulo");
        double q = std::floor(x / y);
        return Value::from(op == "//" ? q : x - q * y);
    }
    if (op == "**") {
        if (x == 0 && y < 0) type_error("0.0 cannot be raised to a negative power");
        return Value::from(std::pow(x, y));
    }
    return unsupported();
}

// ---- filters ----

namespace {

// "a.b.0": jinja2's attribute getter for map/selectattr/sort/... (items first, then attributes).
Value get_path(const Value& v, const std::string& path) {
    Value cur = v;
    size_t start = 0;
    while (true) {
        size_t dot = path.find('.', start);
        std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        bool digits = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
        cur = get_item(cur, digits ? Value::from(int64_t(std::stoll(part))) : Value::from(part));
        if (dot == std::string::npos) return cur;
        start = dot + 1;
    }
}

Args tail_args(const Args& a, size_t from) {
    Args t;
    for (size_t i = from; i < a.positional.size(); ++i) t.positional.push_back(a.positional[i]);
    t.keywords = a.keywords;
    return t;
}

// select/reject/selectattr/rejectattr.
Value select(const Value& input, const Args& a, bool by_attr, bool keep) {
    size_t i = 0;
    std::string attr;
    if (by_attr) {
        if (a.positional.empty()) type_error("selectattr needs an attribute name");
        attr = as_string(a.positional[i++], "attribute");
    }
    std::string test = i < a.positional.size() ? as_string(a.positional[i++], "test name") : "";
    Args targs = tail_args(a, i);
    List out;
    if (!truthy(input)) return Value::from(std::move(out), true);  // jinja2: `if value:` first
    for (const auto& item : iterate(input)) {
        Value v = by_attr ? get_path(item, attr) : item;
        bool ok = test.empty() ? truthy(v) : apply_test(test, v, targs);
        if (ok == keep) out.push_back(item);
    }
    return Value::from(std::move(out), true);
}

// The key sort/unique/min/max compare by: lower-cased strings unless case_sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
    if (!case_sensitive && v.is_string()) return Value::from(lower(v.string));
    return v;
}

Value do_sort(const Value& input, const Args& a) {
    bool reverse = arg_bool(a, 0, "reverse", false), cs = arg_bool(a, 1, "case_sensitive", false);
    const Value* attr = a.get(2, "attribute");
    List items = iterate(input);
    std::vector<std::pair<Value, Value>> keyed;
    for (auto& x : items) keyed.emplace_back(sort_key(attr && !attr->is_none() ? get_path(x, to_str(*attr)) : x, cs), x);
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& p, const auto& q) {
        return reverse ? compare(q.first, p.first) < 0 : compare(p.first, q.first) < 0;
    });
    List out;
    for (auto& [k, x] : keyed) out.push_back(x);
    return Value::from(std::move(out));
}

std::string indent(const std::string& s, const Value* width, bool first, bool blank) {
    std::string pad = width && width->is_string() ? width->string : std::string(size_t(width ? as_int(*width, "width") : 4), ' ');
    std::vector<std::string> lines = splitlines(s + "\n");
    std::string out;
    if (blank) {
        for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" + pad : "") + lines[i];
    } else {
        out = lines.empty() ? "" : lines[0];
        for (size_t i = 1; i < lines.size(); ++i) out += "\n" + (lines[i].empty() ? "" : pad + lines[i]);
    }
    return first ? pad + out : out;
}

Value to_int(const Value& v, const Args& a) {
    if (v.is_undefined()) fail_undefined(v);  // int(Undefined) raises
    const Value* def = a.get(0, "default");
    Value fallback = def ? *def : Value::from(int64_t(0));
    int base = int(a.get(1, "base") ? as_int(*a.get(1, "base"), "base") : 10);
    if (v.kind == Kind::Int) return v;
    if (v.kind == Kind::Bool) return Value::from(int64_t(v.boolean));
    if (v.kind == Kind::Float) return Value::from(int64_t(v.real));
    if (v.is_string()) {
        std::string s = strip(v.string, nullptr, true, true), digits;
        for (char c : s)
            if (c != '_') digits += c;
        char* end = nullptr;
        long long i = std::strtoll(digits.c_str(), &end, base);
        if (!digits.empty() && end && *end == 0) return Value::from(int64_t(i));
        double d = std::strtod(digits.c_str(), &end);
        if (!digits.empty() && end && *end == 0) return Value::from(int64_t(d));
    }
    return fallback;
}

Value tojson(const Value& v, const Args& a) {
    // HF: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
    bool ascii = arg_bool(a, 0, "ensure_ascii", false);
    const Value* ind = a.get(1, "indent");
    int indent = ind && !ind->is_none() ? int(as_int(*ind, "indent")) : -1;
    std::string item_sep = indent >= 0 ? "," : ", ", key_sep = ": ";
    if (const Value* sep = a.get(2, "separators"); sep && !sep->is_none()) {
        if (!sep->is_list() || sep->list->size() != 2) type_error("separators must be a pair of strings");
        item_sep = as_string((*sep->list)[0], "separator");
        key_sep = as_string((*sep->list)[1], "separator");
    }
    return Value::from(to_json(v, ascii, indent, item_sep, key_sep, arg_bool(a, 3, "sort_keys", false)));
}

using Filter = Value (*)(const Value&, const Args&);

const std::map<std::string, Filter>& filters() {
    static const std::map<std::string, Filter> table = {
        {"abs", [](const Value& v, const Args&) {
             if (v.kind == Kind::Float) return Value::from(std::fabs(v.real));
             return Value::from(int64_t(std::llabs(as_int(v, "abs argument"))));
         }},
        {"attr", [](const Value& v, const Args& a) {
             if (a.positional.empty()) type_error("attr needs a name");
             return get_attr(v, as_string(a.positional[0], "attribute name"));
         }},
        {"capitalize", [](const Value& v, const Args&) { return Value::from(capitalize(to_str(v))); }},
        {"count", [](const Value& v, const Args&) { return Value::from(py_len(v)); }},
        {"default", [](const Value& v, const Args& a) {
             const Value* def = a.get(0, "default_value");
             bool boolean = arg_bool(a, 1, "boolean", false);
             if (v.is_undefined() || (boolean && !truthy(v))) return def ? *def : Value::from("");
             return v;
         }},
        {"dictsort", [](const Value& v, const Args& a) {
             if (!v.is_dict()) type_error("dictsort needs a dict, not " + type_name(v));
             bool cs = arg_bool(a, 0, "case_sensitive", false);
             const Value* by = a.get(1, "by");
             bool by_value = by && to_str(*by) == "value", reverse = arg_bool(a, 2, "reverse", false);
             List items = *pairs(*v.dict).list;
             std::stable_sort(items.begin(), items.end(), [&](const Value& p, const Value& q) {
                 Value x = sort_key((*p.list)[by_value], cs), y = sort_key((*q.list)[by_value], cs);
                 return reverse ? compare(y, x) < 0 : compare(x, y) < 0;
             });
             return Value::from(std::move(items));
         }},
        {"escape", [](const Value& v, const Args&) {
             if (v.safe) return v;
             Value s = Value::from(html_escape(to_str(v)));
             s.safe = true;
             return s;
         }},
        {"first", [](const Value& v, const Args&) {
             List items = iterate(v);
             return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
         }},
        {"float", [](const Value& v, const Args& a) {
             if (v.is_undefined()) fail_undefined(v);  // float(Undefined) raises
             if (v.kind == Kind::Float) return v;
             if (v.kind == Kind::Int || v.kind == Kind::Bool) return Value::from(as_double(v));
             if (v.is_string()) {
                 std::string s = strip(v.string, nullptr, true, true);
                 char* end = nullptr;
                 double d = std::strtod(s.c_str(), &end);
                 if (!s.empty() && end && *end == 0) return Value::from(d);
             }
             const Value* def = a.get(0, "default");
             return def ? *def : Value::from(0.0);
         }},
        {"indent", [](const Value& v, const Args& a) {
             if (!v.is_string()) type_error("unsupported operand type(s) for +=: '" + type_name(v) + "' and 'str'");
             return Value::from(indent(to_str(v), a.get(0, "width"), arg_bool(a, 1, "first", false),
                                       arg_bool(a, 2, "blank", false)));
         }},
        {"int", [](const Value& v, const Args& a) { return to_int(v, a); }},
        {"items", [](const Value& v, const Args&) {
             if (v.is_undefined()) return Value::from(List{}, true);
             if (!v.is_dict()) type_error("Can only get item pairs from a mapping.");
             Value p = pairs(*v.dict);
             p.generator = true;
             return p;
         }},
        {"join", [](const Value& v, const Args& a) {
             const Value* sep = a.get(0, "d");
             const Value* attr = a.get(1, "attribute");
             std::string out, s = sep ? to_str(*sep) : "";
             bool first = true;
             for (const auto& x : iterate(v)) {
                 out += (first ? "" : s) + to_str(attr && !attr->is_none() ? get_path(x, to_str(*attr)) : x);
                 first = false;
             }
             return Value::from(out);
         }},
        {"last", [](const Value& v, const Args&) {
             if (v.generator) type_error("'generator' object is not reversible");
             List items = iterate(v);
             return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
         }},
        {"length", [](const Value& v, const Args&) { return Value::from(py_len(v)); }},
        {"list", [](const Value& v, const Args&) { return Value::from(iterate(v)); }},
        {"lower", [](const Value& v, const Args&) { return keep_safe(v, Value::from(lower(to_str(v)))); }},
        {"map", [](const Value& v, const Args& a) {
             List out;
             if (!truthy(v)) return Value::from(std::move(out), true);  // jinja2: `if value:` first
             if (const Value* attr = a.keyword("attribute")) {
                 const Value* def = a.keyword("default");
                 for (const auto& x : iterate(v)) {
                     Value y = get_path(x, to_str(*attr));
                     out.push_back(y.is_undefined() && def ? *def : y);
                 }
             } else {
                 if (a.positional.empty()) type_error("map needs a filter name or attribute=");
                 std::string name = as_string(a.positional[0], "filter name");
                 Args rest = tail_args(a, 1);
                 for (const auto& x : iterate(v)) out.push_back(apply_filter(name, x, rest));
             }
             return Value::from(std::move(out), true);
         }},
        {"max", [](const Value& v, const Args& a) {
             List items = iterate(v);
             if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
             bool cs = arg_bool(a, 0, "case_sensitive", false);
             const Value* attr = a.get(1, "attribute");
             auto key = [&](const Value& x) { return sort_key(attr && !attr->is_none() ? get_path(x, to_str(*attr)) : x, cs); };
             Value best = items[0];
             for (const auto& x : items)
                 if (compare(key(x), key(best)) > 0) best = x;
             return best;
         }},
        {"min", [](const Value& v, const Args& a) {
             List items = iterate(v);
             if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
             bool cs = arg_bool(a, 0, "case_sensitive", false);
             const Value* attr = a.get(1, "attribute");
             auto key = [&](const Value& x) { return sort_key(attr && !attr->is_none() ? get_path(x, to_str(*attr)) : x, cs); };
             Value best = items[0];
             for (const auto& x : items)
                 if (compare(key(x), key(best)) < 0) best = x;
             return best;
         }},
        {"reject", [](const Value& v, const Args& a) { return select(v, a, false, false); }},
        {"rejectattr", [](const Value& v, const Args& a) { return select(v, a, true, false); }},
        {"replace", [](const Value& v, const Args& a) {
             if (a.positional.size() < 2) type_error("replace needs old and new");
             const Value* n = a.get(2, "count");
             return Value::from(replace(to_str(v), to_str(a.positional[0]), to_str(a.positional[1]),
                                        n && !n->is_none() ? as_int(*n, "count") : -1));
         }},
        {"reverse", [](const Value& v, const Args&) {
             if (v.is_string()) {
                 std::u32string u = decode_utf8(v.string);
                 std::reverse(u.begin(), u.end());
                 return Value::from(encode_utf8(u));
             }
             List items = iterate(v);
             std::reverse(items.begin(), items.end());
             return Value::from(std::move(items), true);
         }},
        {"round", [](const Value& v, const Args& a) {
             int64_t precision = a.get(0, "precision") ? as_int(*a.get(0, "precision"), "precision") : 0;
             std::string method = a.get(1, "method") ? to_str(*a.get(1, "method")) : "common";
             double scale = std::pow(10.0, double(precision)), x = as_double(v) * scale;
             double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);
             return Value::from(r / scale);
         }},
        {"safe", [](const Value& v, const Args&) {
             Value s = Value::from(to_str(v));
             s.safe = true;
             return s;
         }},
        {"select", [](const Value& v, const Args& a) { return select(v, a, false, true); }},
        {"selectattr", [](const Value& v, const Args& a) { return select(v, a, true, true); }},
        {"sort", do_sort},
        {"string", [](const Value& v, const Args&) { return v.is_string() ? v : Value::from(to_str(v)); }},
        {"sum", [](const Value& v, const Args& a) {
             const Value* attr = a.get(0, "attribute");
             Value total = a.get(1, "start") ? *a.get(1, "start") : Value::from(int64_t(0));
             for (const auto& x : iterate(v))
                 total = arithmetic("+", total, attr && !attr->is_none() ? get_path(x, to_str(*attr)) : x);
             return total;
         }},
        {"title", [](const Value& v, const Args&) { return Value::from(jinja_title(to_str(v))); }},
        {"tojson", tojson},
        {"trim", [](const Value& v, const Args& a) {
             return keep_safe(v, Value::from(strip(to_str(v), a.get(0, "chars"), true, true)));
         }},
        {"unique", [](const Value& v, const Args& a) {
             bool cs = arg_bool(a, 0, "case_sensitive", false);
             const Value* attr = a.get(1, "attribute");
             List out, seen;
             for (const auto& x : iterate(v)) {
                 Value k = sort_key(attr && !attr->is_none() ? get_path(x, to_str(*attr)) : x, cs);
                 if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, k); })) continue;
                 seen.push_back(k);
                 out.push_back(x);
             }
             return Value::from(std::move(out), true);
         }},
        {"upper", [](const Value& v, const Args&) { return keep_safe(v, Value::from(upper(to_str(v)))); }},
        {"wordcount", [](const Value& v, const Args&) {
             int64_t n = 0;
             bool in_word = false;
             for (char c : to_str(v)) {
                 bool w = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || static_cast<unsigned char>(c) >= 0x80;
                 if (w && !in_word) ++n;
                 in_word = w;
             }
             return Value::from(n);
         }},
    };
    return table;
}

const std::map<std::string, std::string>& filter_aliases() {
    static const std::map<std::string, std::string> table = {{"d", "default"}, {"e", "escape"}};
    return table;
}

}  // namespace

bool has_filter(const std::string& name) {
    return filters().count(name) || filter_aliases().count(name);
}

Value apply_filter(const std::string& name, const Value& input, const Args& args) {
    auto alias = filter_aliases().find(name);
    auto it = filters().find(alias == filter_aliases().end() ? name : alias->second);
    // jinja2's runtime message (an unknown filter outside `if` fails when parsing instead).
    if (it == filters().end()) throw Error("No filter named '" + name + "' found.");
    return it->second(input, args);
}

// ---- tests ----

namespace {

using Test = bool (*)(const Value&, const Args&);

const Value& test_arg(const Args& a, const char* test) {
    if (a.positional.empty()) type_error(std::string("test '") + test + "' needs an argument");
    return a.positional[0];
}

const std::map<std::string, Test>& tests() {
    static const std::map<std::string, Test> table = {
        {"boolean", [](const Value& v, const Args&) { return v.kind == Kind::Bool; }},
        {"callable", [](const Value& v, const Args&) { return v.kind == Kind::Callable; }},
        {"defined", [](const Value& v, const Args&) { return !v.is_undefined(); }},
        {"divisibleby", [](const Value& v, const Args& a) {
             return equals(arithmetic("%", v, test_arg(a, "divisibleby")), Value::from(0));
         }},
        {"eq", [](const Value& v, const Args& a) { return equals(v, test_arg(a, "eq")); }},
        {"escaped", [](const Value& v, const Args&) { return v.safe; }},
        // Python's `value % 2 == 0` and `value % 2 == 1`, for ints and floats alike.
        {"even", [](const Value& v, const Args&) { return equals(arithmetic("%", v, Value::from(2)), Value::from(0)); }},
        {"false", [](const Value& v, const Args&) { return v.kind == Kind::Bool && !v.boolean; }},
        {"filter", [](const Value& v, const Args&) { return v.is_string() && has_filter(v.string); }},
        {"float", [](const Value& v, const Args&) { return v.kind == Kind::Float; }},
        {"ge", [](const Value& v, const Args& a) { return compare(v, test_arg(a, "ge")) >= 0; }},
        {"gt", [](const Value& v, const Args& a) { return compare(v, test_arg(a, "gt")) > 0; }},
        {"in", [](const Value& v, const Args& a) { return contains(test_arg(a, "in"), v); }},
        {"integer", [](const Value& v, const Args&) { return v.kind == Kind::Int; }},
        {"iterable", [](const Value& v, const Args&) {
             return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
         }},
        {"le", [](const Value& v, const Args& a) { return compare(v, test_arg(a, "le")) <= 0; }},
        // str(value).islower() / isupper(): a cased character, and none of the other case.
        {"lower", [](const Value& v, const Args&) {
             std::string s = to_str(v);
             return s != upper(s) && s == lower(s);
         }},
        {"lt", [](const Value& v, const Args& a) { return compare(v, test_arg(a, "lt")) < 0; }},
        {"mapping", [](const Value& v, const Args&) { return v.is_dict(); }},
        {"ne", [](const Value& v, const Args& a) { return !equals(v, test_arg(a, "ne")); }},
        {"none", [](const Value& v, const Args&) { return v.is_none(); }},
        {"number", [](const Value& v, const Args&) { return v.is_number(); }},
        {"odd", [](const Value& v, const Args&) { return equals(arithmetic("%", v, Value::from(2)), Value::from(1)); }},
        {"sameas", [](const Value& v, const Args& a) {
             const Value& o = test_arg(a, "sameas");
             if (v.kind != o.kind) return false;
             if (v.is_list()) return v.list == o.list;
             if (v.is_dict() || v.kind == Kind::Namespace) return v.dict == o.dict;
             return equals(v, o) && !v.is_string();  // None, True, False and small ints are singletons
         }},
        {"sequence", [](const Value& v, const Args&) {
             return v.is_undefined() || v.is_string() || (v.is_list() && !v.generator) || v.is_dict();
         }},
        {"string", [](const Value& v, const Args&) { return v.is_string(); }},
        {"test", [](const Value& v, const Args&) { return v.is_string() && has_test(v.string); }},
        {"true", [](const Value& v, const Args&) { return v.kind == Kind::Bool && v.boolean; }},
        {"undefined", [](const Value& v, const Args&) { return v.is_undefined(); }},
        {"upper", [](const Value& v, const Args&) {
             std::string s = to_str(v);
             return s != lower(s) && s == upper(s);
         }},
    };
    return table;
}

const std::map<std::string, std::string>& test_aliases() {
    static const std::map<std::string, std::string> table = {
        {"==", "eq"}, {"equalto", "eq"}, {"!=", "ne"}, {"<", "lt"}, {"lessthan", "lt"}, {"<=", "le"},
        {">", "gt"}, {"greaterthan", "gt"}, {">=", "ge"}};
    return table;
}

}  // namespace

bool has_test(const std::string& name) { return tests().count(name) || test_aliases().count(name); }

bool apply_test(const std::string& name, const Value& input, const Args& args) {
    auto alias = test_aliases().find(name);
    auto it = tests().find(alias == test_aliases().end() ? name : alias->second);
    if (it == tests().end()) throw Error("No test named '" + name + "' found.");
    return it->second(input, args);
}

// ---- globals ----

Dict make_globals(const std::tm& now) {
    Dict g;
    g.set("range", Value::function("range", [](const Args& a) {
        if (a.positional.empty() || a.positional.size() > 3) type_error("range expected 1 to 3 arguments");
        int64_t start = 0, stop, step = 1;
        if (a.positional.size() == 1) {
            stop = as_int(a.positional[0], "range argument");
        } else {
            start = as_int(a.positional[0], "range argument");
            stop = as_int(a.positional[1], "range argument");
            if (a.positional.size() == 3) step = as_int(a.positional[2], "range argument");
        }
        if (step == 0) type_error("range() arg 3 must not be zero");
        List l;
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) l.push_back(Value::from(i));
        return Value::from(std::move(l));
    }));
    g.set("dict", Value::function("dict", [](const Args& a) {
        Dict d;
        if (!a.positional.empty()) {
            if (!a.positional[0].is_dict()) type_error("dict() takes a mapping and keyword arguments");
            d = *a.positional[0].dict;
        }
        for (const auto& [k, v] : a.keywords) d.set(k, v);
        return Value::from(std::move(d));
    }));
    g.set("namespace", Value::function("namespace", [](const Args& a) {
        Value ns;
        ns.kind = Kind::Namespace;
        ns.dict = std::make_shared<Dict>();
        for (const auto& p : a.positional) {
            if (!p.is_dict()) type_error("namespace() takes a mapping and keyword arguments");
            for (const auto& [k, v] : p.dict->items) ns.dict->set(k, v);
        }
        for (const auto& [k, v] : a.keywords) ns.dict->set(k, v);
        return ns;
    }));
    g.set("raise_exception", Value::function("raise_exception", [](const Args& a) -> Value {
        throw Error(a.positional.empty() ? "" : to_str(a.positional[0]), 0, 0, true);
    }));
    g.set("strftime_now", Value::function("strftime_now", [now](const Args& a) {
        if (a.positional.empty()) type_error("strftime_now needs a format");
        char buf[512];
        size_t n = std::strftime(buf, sizeof buf, as_string(a.positional[0], "format").c_str(), &now);
        return Value::from(std::string(buf, n));
    }));
    return g;
}

}  // namespace vkllm::jinja
