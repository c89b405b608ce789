#include "template/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "template/budget.h"

namespace vkllm::jinja {

namespace {

// Values whose last owner went away, waiting to be taken apart (see Value::release).
thread_local std::vector<Value> t_released;
thread_local bool t_releasing = false;

void check_depth(int depth) {
    if (depth > limits::kMaxValueDepth)
        throw Error("value nested too deeply (limit: " + std::to_string(limits::kMaxValueDepth) + " levels)");
}

}  // namespace

// Moves the nested values this value alone owns onto a list, so their own destruction happens
// in the loop below rather than inside this one's: destroying a value nested a million deep
// then takes a constant depth of stack. A callable's captured values are destroyed with it,
// and their own nested values come here.
void Value::release() {
    auto keep = [](Value& v) {
        if (v.list || v.dict || v.callable) t_released.push_back(std::move(v));
    };
    if (list && list.use_count() == 1)
        for (Value& x : *list) keep(x);
    if (dict && dict.use_count() == 1)
        for (auto& [k, x] : dict->items) {
            keep(k);
            keep(x);
        }
    if (t_releasing) return;
    t_releasing = true;
    while (!t_released.empty()) {
        Value v = std::move(t_released.back());
        t_released.pop_back();
    }  // each v's release() adds what it owns
    t_releasing = false;
    if (t_released.capacity() > 4096) t_released.shrink_to_fit();
}

const std::string& Value::empty_text() {
    static const std::string empty;
    return empty;
}

const Value* Dict::find(const std::string& key) const {
    charge(items.size() * (key.size() + 1));  // up to the key's bytes compared per item
    for (const auto& [k, v] : items)
        if (k.is_string() && k.string() == key) return &v;
    return nullptr;
}

const Value* Dict::find(const Value& key) const {
    for (const auto& [k, v] : items)
        if (equals(k, key)) return &v;
    return nullptr;
}

void Dict::set(const std::string& key, Value v) { set(Value::from(key), std::move(v)); }

void Dict::set(const Value& key, Value v) {
    for (auto& [k, old] : items)
        if (equals(k, key)) { old = std::move(v); return; }
    items.emplace_back(key, std::move(v));
}

const Value* Args::keyword(const std::string& name) const {
    for (const auto& [k, v] : keywords)
        if (k == name) return &v;
    return nullptr;
}

const Value* Args::get(size_t index, const std::string& name) const {
    if (index < positional.size()) return &positional[index];
    return keyword(name);
}

std::string type_name(const Value& v) {
    switch (v.kind) {
        case Kind::Undefined: return "Undefined";
        case Kind::None: return "NoneType";
        case Kind::Bool: return "bool";
        case Kind::Int: return "int";
        case Kind::Float: return "float";
        case Kind::String: return "str";
        case Kind::List: return v.generator ? "generator" : v.tuple ? "tuple" : "list";
        case Kind::Dict: return "dict";
        case Kind::Namespace: return "Namespace";
        case Kind::Callable: return "function";
    }
    return "?";
}

bool truthy(const Value& v) {
    switch (v.kind) {
        case Kind::Undefined: case Kind::None: return false;
        case Kind::Bool: return v.boolean;
        case Kind::Int: return v.integer != 0;
        case Kind::Float: return v.real != 0;
        case Kind::String: return !v.string().empty();
        case Kind::List: return v.generator || !v.list->empty();  // a generator object is true
        case Kind::Dict: return !v.dict->items.empty();
        case Kind::Namespace: case Kind::Callable: return true;
    }
    return false;
}

std::string float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    // The fewest significant digits that read back as the same double.
    char buf[64];
    int precision = 1;
    for (; precision <= 17; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*e", precision - 1, d);
        if (std::strtod(buf, nullptr) == d) break;
    }
    // buf is "[-]D.DDDe[+-]XX": take the digits and the decimal exponent.
    std::string s = buf;
    bool negative = s[0] == '-';
    if (negative) s.erase(0, 1);
    size_t e = s.find('e');
    int exponent = std::atoi(s.c_str() + e + 1);
    std::string digits;
    for (size_t i = 0; i < e; ++i)
        if (s[i] != '.') digits += s[i];
    while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
    std::string out;
    if (exponent < -4 || exponent >= 16) {  // Python's repr switches to scientific notation here
        out = digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        char exp[16];
        std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        out += exp;
    } else if (exponent < 0) {
        out = "0." + std::string(size_t(-exponent - 1), '0') + digits;
    } else {
        size_t int_digits = size_t(exponent) + 1;
        if (digits.size() <= int_digits) {
            out = digits + std::string(int_digits - digits.size(), '0') + ".0";
        } else {
            out = digits.substr(0, int_digits) + "." + digits.substr(int_digits);
        }
    }
    return negative ? "-" + out : out;
}

namespace {

// How many bytes repr() writes for byte c of a string quoted with `quote`.
size_t repr_width(unsigned char c, char quote) {
    if (c == '\\' || c == quote || c == '\n' || c == '\r' || c == '\t') return 2;
    if (c < 0x20 || c == 0x7f) return 4;
    return 1;
}

void repr_string(std::string& to, const std::string& s) {
    bool has_single = s.find('\'') != std::string::npos, has_double = s.find('"') != std::string::npos;
    char quote = has_single && !has_double ? '"' : '\'';
    uint64_t size = 2;
    for (unsigned char c : s) size += repr_width(c, quote);
    check_string_size(add_sat(to.size(), size));
    charge(size);
    std::string& out = to;
    out += quote;
    for (unsigned char c : s) {
        if (c == '\\') out += "\\\\";
        else if (c == quote) { out += '\\'; out += char(c); }
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else out += char(c);
    }
    out += quote;
}

// repr(v) appended to `out`, the string limit checked as it grows.
void repr_into(std::string& out, const Value& v, int depth) {
    check_depth(depth);
    switch (v.kind) {
        case Kind::String: repr_string(out, v.string()); return;
        case Kind::List: {
            if (v.generator) return append_checked(out, "<generator object>");
            append_checked(out, v.tuple ? "(" : "[");
            for (size_t i = 0; i < v.list->size(); ++i) {
                if (i) append_checked(out, ", ");
                repr_into(out, (*v.list)[i], depth + 1);
            }
            if (v.tuple && v.list->size() == 1) append_checked(out, ",");
            return append_checked(out, v.tuple ? ")" : "]");
        }
        case Kind::Dict: {
            append_checked(out, "{");
            bool first = true;
            for (const auto& [k, x] : v.dict->items) {
                if (!first) append_checked(out, ", ");
                repr_into(out, k, depth + 1);
                append_checked(out, ": ");
                repr_into(out, x, depth + 1);
                first = false;
            }
            return append_checked(out, "}");
        }
        case Kind::Undefined: return append_checked(out, "Undefined");
        default: return append_checked(out, to_str(v));
    }
}

}  // namespace

std::string repr(const Value& v) {
    std::string out;
    repr_into(out, v, 0);
    return out;
}

std::string to_str(const Value& v) {
    switch (v.kind) {
        case Kind::Undefined: return "";
        case Kind::None: return "None";
        case Kind::Bool: return v.boolean ? "True" : "False";
        case Kind::Int: return std::to_string(v.integer);
        case Kind::Float: return float_repr(v.real);
        case Kind::String: return v.string();
        case Kind::List: case Kind::Dict: return repr(v);
        case Kind::Namespace: return "<Namespace>";
        case Kind::Callable: return "<function " + v.callable->name + ">";
    }
    return "";
}

void fail_undefined(const Value& v) {
    throw Error(v.string().empty() ? "value is undefined" : v.string());
}

namespace {

bool equals_at(const Value& a, const Value& b, int depth) {
    check_depth(depth);
    charge(limits::kValueWork);
    if (a.is_number() && b.is_number()) {
        if (a.kind == Kind::Float || b.kind == Kind::Float) {
            double x = a.kind == Kind::Float ? a.real : double(a.kind == Kind::Bool ? a.boolean : a.integer);
            double y = b.kind == Kind::Float ? b.real : double(b.kind == Kind::Bool ? b.boolean : b.integer);
            return x == y;
        }
        int64_t x = a.kind == Kind::Bool ? a.boolean : a.integer, y = b.kind == Kind::Bool ? b.boolean : b.integer;
        return x == y;
    }
    if (a.kind != b.kind) return false;
    switch (a.kind) {
        case Kind::Undefined: case Kind::None: return true;
        case Kind::String:
            if (a.text == b.text) return true;  // the same text (a copy of one value)
            if (a.string().size() == b.string().size()) charge(a.string().size());
            return a.string() == b.string();
        case Kind::List: {
            if (a.list->size() != b.list->size()) return false;
            for (size_t i = 0; i < a.list->size(); ++i)
                if (!equals_at((*a.list)[i], (*b.list)[i], depth + 1)) return false;
            return true;
        }
        case Kind::Dict: {
            if (a.dict->items.size() != b.dict->items.size()) return false;
            for (const auto& [k, x] : a.dict->items) {
                const Value* y = nullptr;
                for (const auto& [bk, bx] : b.dict->items)
                    if (equals_at(k, bk, depth + 1)) { y = &bx; break; }
                if (!y || !equals_at(x, *y, depth + 1)) return false;
            }
            return true;
        }
        default: return a.dict == b.dict && a.callable == b.callable;
    }
}

int compare_at(const Value& a, const Value& b, int depth) {
    check_depth(depth);
    charge(limits::kValueWork);
    if (a.is_number() && b.is_number()) {
        double x = a.kind == Kind::Float ? a.real : double(a.kind == Kind::Bool ? a.boolean : a.integer);
        double y = b.kind == Kind::Float ? b.real : double(b.kind == Kind::Bool ? b.boolean : b.integer);
        if (a.kind != Kind::Float && b.kind != Kind::Float) {
            int64_t i = a.kind == Kind::Bool ? a.boolean : a.integer, j = b.kind == Kind::Bool ? b.boolean : b.integer;
            return i < j ? -1 : i > j;
        }
        return x < y ? -1 : x > y;
    }
    if (a.is_string() && b.is_string()) {
        // Python compares code points; UTF-8 byte order is the same order.
        charge(std::min(a.string().size(), b.string().size()));
        int c = a.string().compare(b.string());
        return c < 0 ? -1 : c > 0;
    }
    if (a.is_list() && b.is_list()) {
        size_t n = std::min(a.list->size(), b.list->size());
        for (size_t i = 0; i < n; ++i)
            if (int c = compare_at((*a.list)[i], (*b.list)[i], depth + 1)) return c;
        return a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size();
    }
    if (a.is_undefined()) fail_undefined(a);
    if (b.is_undefined()) fail_undefined(b);
    throw Error("'<' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

}  // namespace

bool equals(const Value& a, const Value& b) { return equals_at(a, b, 0); }
int compare(const Value& a, const Value& b) { return compare_at(a, b, 0); }

List iterate(const Value& v) {
    switch (v.kind) {
        case Kind::Undefined: return {};
        case Kind::List:
            charge(v.list->size() * limits::kValueWork);
            return *v.list;
        case Kind::Dict: {
            charge(v.dict->items.size() * limits::kValueWork);
            List keys;
            for (const auto& kv : v.dict->items) keys.push_back(kv.first);
            return keys;
        }
        case Kind::String: {
            // One string per character: the count is checked before they are made.
            check_list_size(count_chars(v.string()));
            const std::u32string u = decode_utf8(v.string());
            charge(u.size() * limits::kValueWork);
            List chars;
            chars.reserve(u.size());
            for (char32_t c : u) chars.push_back(Value::from(encode_utf8(std::u32string(1, c))));
            return chars;
        }
        default: throw Error("'" + type_name(v) + "' object is not iterable");
    }
}

std::u32string decode_utf8(const std::string& s) {
    charge(s.size() * limits::kCharWork);
    std::u32string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        unsigned char c = s[i];
        int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
        if (i + n > s.size()) n = 1;
        char32_t cp = n == 1 ? c : n == 2 ? c & 0x1f : n == 3 ? c & 0x0f : c & 0x07;
        for (int k = 1; k < n; ++k) cp = (cp << 6) | (s[i + k] & 0x3f);
        out += cp;
        i += n;
    }
    return out;
}

size_t count_chars(const std::string& s) {
    charge(s.size() * limits::kCharWork / 8);  // a byte looked at, nothing written
    // decode_utf8's steps: a lead byte's length, one byte where the sequence is cut short.
    size_t n = 0;
    for (size_t i = 0; i < s.size(); ++n) {
        unsigned char c = s[i];
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
        i += i + len > s.size() ? 1 : len;
    }
    return n;
}

void append_utf8(std::string& out, char32_t c) {
    if (c < 0x80) out += char(c);
    else if (c < 0x800) { out += char(0xc0 | (c >> 6)); out += char(0x80 | (c & 0x3f)); }
    else if (c < 0x10000) {
        out += char(0xe0 | (c >> 12)); out += char(0x80 | ((c >> 6) & 0x3f)); out += char(0x80 | (c & 0x3f));
    } else {
        out += char(0xf0 | (c >> 18)); out += char(0x80 | ((c >> 12) & 0x3f));
        out += char(0x80 | ((c >> 6) & 0x3f)); out += char(0x80 | (c & 0x3f));
    }
}

std::string encode_utf8(const std::u32string& s) {
    uint64_t size = 0;
    for (char32_t c : s) size += utf8_width(c);
    check_string_size(size);
    charge_string(size);
    std::string out;
    out.reserve(size);
    for (char32_t c : s) append_utf8(out, c);
    return out;
}

bool is_py_space(char32_t c) {
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

namespace {

// How many bytes json.dumps writes for character c inside a string.
size_t json_width(char32_t c, bool ensure_ascii) {
    switch (c) {
        case '"': case '\\': case '\n': case '\r': case '\t': case '\b': case '\f': return 2;
        default: break;
    }
    if (c >= 0x20 && !(ensure_ascii && c > 0x7e)) return utf8_width(c);
    return c >= 0x10000 ? 12 : 6;  // \uXXXX, or a surrogate pair of them
}

// What json.dumps writes for character c inside a string: its escape, or "" when c stands for
// itself. `buf` holds a \uXXXX escape.
const char* json_escape(char32_t c, bool ensure_ascii, char (&buf)[16]) {
    switch (c) {
        case '"': return "\\\"";
        case '\\': return "\\\\";
        case '\n': return "\\n";
        case '\r': return "\\r";
        case '\t': return "\\t";
        case '\b': return "\\b";
        case '\f': return "\\f";
        default: break;
    }
    if (c >= 0x20 && !(ensure_ascii && c > 0x7e)) return "";
    if (c >= 0x10000) {  // a surrogate pair, as Python writes it
        char32_t v = c - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", unsigned(0xd800 + (v >> 10)), unsigned(0xdc00 + (v & 0x3ff)));
    } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
    }
    return buf;
}

// The string as JSON appended to `out`; its size is counted (and checked) before it is written.
void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
    const std::u32string u = decode_utf8(s);
    uint64_t size = 2;
    for (char32_t c : u) size += json_width(c, ensure_ascii);
    check_string_size(add_sat(out.size(), size));
    charge(size);
    out += '"';
    char buf[16];
    for (char32_t c : u) {
        const char* esc = json_escape(c, ensure_ascii, buf);
        if (*esc) out += esc;
        else append_utf8(out, c);
    }
    out += '"';
}

// json.dumps writes non-string keys as strings: 1 -> "1", True -> "true", None -> "null".
std::string json_key(const Value& k) {
    switch (k.kind) {
        case Kind::String: return k.string();
        case Kind::Int: return std::to_string(k.integer);
        case Kind::Float: return float_repr(k.real);
        case Kind::Bool: return k.boolean ? "true" : "false";
        case Kind::None: return "null";
        default: throw Error("keys must be str, int, float, bool or None, not " + type_name(k));
    }
}

struct JsonStyle {
    bool ascii;
    int64_t indent;  // < 0: all on one line
    const std::string& item_sep;
    const std::string& key_sep;
    bool sort_keys;
};

void json_value(std::string& out, const Value& v, const JsonStyle& style, int depth) {
    check_depth(depth);
    // A newline and the indent of `level`: indent * level spaces, counted before they are written.
    auto newline = [&](int level) {
        if (style.indent < 0) return;
        append_checked(out, "\n");
        append_checked(out, size_t(std::min<uint64_t>(mul_sat(uint64_t(style.indent), uint64_t(level)),
                                                      limits::kMaxStringBytes + 1)),
                       ' ');
    };
    switch (v.kind) {
        case Kind::None: return append_checked(out, "null");
        case Kind::Bool: return append_checked(out, v.boolean ? "true" : "false");
        case Kind::Int: return append_checked(out, std::to_string(v.integer));
        case Kind::Float:
            if (std::isnan(v.real)) return append_checked(out, "NaN");
            if (std::isinf(v.real)) return append_checked(out, v.real > 0 ? "Infinity" : "-Infinity");
            return append_checked(out, float_repr(v.real));
        case Kind::String: return json_string(out, v.string(), style.ascii);
        case Kind::List: {
            if (v.generator) break;
            if (v.list->empty()) return append_checked(out, "[]");
            append_checked(out, "[");
            for (size_t i = 0; i < v.list->size(); ++i) {
                if (i) append_checked(out, style.item_sep);
                newline(depth + 1);
                json_value(out, (*v.list)[i], style, depth + 1);
            }
            newline(depth);
            return append_checked(out, "]");
        }
        case Kind::Dict: {
            if (v.dict->items.empty()) return append_checked(out, "{}");
            std::vector<const std::pair<Value, Value>*> items;
            for (const auto& kv : v.dict->items) items.push_back(&kv);
            if (style.sort_keys)
                std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return compare(a->first, b->first) < 0; });
            append_checked(out, "{");
            for (size_t i = 0; i < items.size(); ++i) {
                if (i) append_checked(out, style.item_sep);
                newline(depth + 1);
                json_string(out, json_key(items[i]->first), style.ascii);
                append_checked(out, style.key_sep);
                json_value(out, items[i]->second, style, depth + 1);
            }
            newline(depth);
            return append_checked(out, "}");
        }
        default: break;
    }
    throw Error("Object of type " + type_name(v) + " is not JSON serializable");
}

Value from_json_at(const nlohmann::ordered_json& j, int depth) {
    check_depth(depth);
    switch (j.type()) {
        case nlohmann::ordered_json::value_t::null: return Value::none();
        case nlohmann::ordered_json::value_t::boolean: return Value::from(j.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer: return Value::from(j.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: {
            const uint64_t u = j.get<uint64_t>();
            if (u > uint64_t(INT64_MAX)) throw Error("the integer " + std::to_string(u) + " does not fit a 64-bit integer");
            return Value::from(int64_t(u));
        }
        case nlohmann::ordered_json::value_t::number_float: return Value::from(j.get<double>());
        case nlohmann::ordered_json::value_t::string: return Value::from(j.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            List l;
            l.reserve(j.size());
            for (const auto& x : j) l.push_back(from_json_at(x, depth + 1));
            return Value::from(std::move(l));
        }
        case nlohmann::ordered_json::value_t::object: {
            Dict d;  // a parsed object's keys are unique already
            d.items.reserve(j.size());
            for (auto it = j.begin(); it != j.end(); ++it)
                d.items.emplace_back(Value::from(it.key()), from_json_at(it.value(), depth + 1));
            return Value::from(std::move(d));
        }
        default: throw Error("unsupported JSON value");
    }
}

}  // namespace

std::string to_json(const Value& v, bool ensure_ascii, int64_t indent, const std::string& item_sep,
                    const std::string& key_sep, bool sort_keys) {
    std::string out;
    json_value(out, v, JsonStyle{ensure_ascii, indent, item_sep, key_sep, sort_keys}, 0);
    return out;
}

Value from_json(const nlohmann::ordered_json& j) { return from_json_at(j, 0); }

}  // namespace vkllm::jinja
