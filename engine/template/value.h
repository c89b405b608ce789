// The interpreter's dynamic value: what a Jinja expression evaluates to, with Python's
// semantics where chat templates rely on them (truthiness, equality, str() and repr()).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace vkllm::jinja {

// A failure while lexing, parsing or rendering. The position is filled in by whoever knows it
// (the token or node being evaluated) when the thrower did not.
struct Error : std::runtime_error {
    Error(const std::string& message, int line = 0, int column = 0, bool raised = false)
        : std::runtime_error(message), line(line), column(column), raised(raised) {}
    // The caller's cancellation callback stopped the render (no position: it is not the
    // template's fault).
    static Error cancellation() {
        Error e("rendering was cancelled");
        e.cancelled = true;
        return e;
    }
    // Where the position is not the template's to report.
    bool positionless() const { return raised || cancelled; }
    int line, column;
    bool raised;  // raise_exception() was called by the template
    bool cancelled = false;
};

struct Value;
using List = std::vector<Value>;

// A dictionary in insertion order (Python dicts keep insertion order). Keys are usually
// strings; templates also write integer keys.
struct Dict {
    std::vector<std::pair<Value, Value>> items;
    const Value* find(const std::string& key) const;
    const Value* find(const Value& key) const;
    void set(const std::string& key, Value v);
    void set(const Value& key, Value v);
};

// Positional and keyword arguments of a call.
struct Args {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keywords;
    const Value* keyword(const std::string& name) const;
    // Positional `index`, else keyword `name`, else nullptr.
    const Value* get(size_t index, const std::string& name) const;
};

struct Callable {
    std::string name;
    std::function<Value(const Args&)> call;
};

enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Callable };

struct Value {
    Kind kind = Kind::Undefined;
    bool boolean = false;
    int64_t integer = 0;
    double real = 0;
    // String: the text; Undefined: why it is undefined (the error message on use). Shared and
    // immutable: copying a value never copies its text.
    std::shared_ptr<const std::string> text;
    std::shared_ptr<List> list;          // List
    std::shared_ptr<Dict> dict;          // Dict and Namespace (shared: a namespace is mutable)
    std::shared_ptr<Callable> callable;  // Callable
    bool generator = false;  // a List made by map/select/...: Python would hold a generator
    bool tuple = false;      // a List that Python holds as a tuple (repr "(1, 2)")
    bool safe = false;       // a String marked safe (printed unchanged; no effect without autoescape)

    Value() = default;
    Value(const Value&) = default;
    Value(Value&&) noexcept = default;
    Value& operator=(const Value&) = default;
    Value& operator=(Value&&) noexcept = default;
    // Values can nest without bound (a list wrapped in a list in a loop): the last owner of a
    // list, dict or callable takes it apart iteratively instead of recursing.
    ~Value() {
        if (list || dict || callable) release();
    }

    static Value undefined(std::string why) { Value v; v.set_text(std::move(why)); return v; }
    static Value none() { Value v; v.kind = Kind::None; return v; }
    static Value from(bool b) { Value v; v.kind = Kind::Bool; v.boolean = b; return v; }
    static Value from(int64_t i) { Value v; v.kind = Kind::Int; v.integer = i; return v; }
    static Value from(int i) { return from(int64_t(i)); }
    static Value from(size_t i) { return from(int64_t(i)); }
    static Value from(double d) { Value v; v.kind = Kind::Float; v.real = d; return v; }
    static Value from(std::string s) { Value v; v.kind = Kind::String; v.set_text(std::move(s)); return v; }
    static Value from(const char* s) { return from(std::string(s)); }
    static Value from(List l, bool generator = false) {
        Value v; v.kind = Kind::List; v.list = std::make_shared<List>(std::move(l)); v.generator = generator; return v;
    }
    static Value from(Dict d) { Value v; v.kind = Kind::Dict; v.dict = std::make_shared<Dict>(std::move(d)); return v; }
    static Value pair(Value a, Value b) {
        Value v = from(List{std::move(a), std::move(b)});
        v.tuple = true;
        return v;
    }
    static Value function(std::string name, std::function<Value(const Args&)> fn) {
        Value v; v.kind = Kind::Callable;
        v.callable = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
        return v;
    }

    const std::string& string() const { return text ? *text : empty_text(); }

    bool is_undefined() const { return kind == Kind::Undefined; }
    bool is_none() const { return kind == Kind::None; }
    bool is_string() const { return kind == Kind::String; }
    bool is_number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
    bool is_list() const { return kind == Kind::List; }
    bool is_dict() const { return kind == Kind::Dict; }

private:
    void release();
    void set_text(std::string s) {
        if (!s.empty()) text = std::make_shared<const std::string>(std::move(s));
    }
    static const std::string& empty_text();
};

// Recursive operations on values (equals, compare, repr, to_json, from_json) throw an Error
// naming limits::kMaxValueDepth for values nested deeper than it.

// Python's names of the types, as in its error messages ("str", "int", "NoneType", "list", ...).
std::string type_name(const Value& v);
bool truthy(const Value& v);
std::string to_str(const Value& v);    // str(v); Undefined prints as ""
std::string repr(const Value& v);      // repr(v)
std::string float_repr(double d);      // Python's shortest round-trip repr of a float
bool equals(const Value& a, const Value& b);                 // ==
int compare(const Value& a, const Value& b);                 // <0, 0, >0; throws for unordered types
// Throws on an undefined value with the reason it carries.
[[noreturn]] void fail_undefined(const Value& v);
// The items one iterates over: a list's values, a dict's keys, a string's characters.
List iterate(const Value& v);

// Python's json.dumps(v, ensure_ascii, indent, separators, sort_keys); indent < 0: none.
std::string to_json(const Value& v, bool ensure_ascii, int64_t indent, const std::string& item_sep,
                    const std::string& key_sep, bool sort_keys);
// Throws Error for what a Value cannot hold (an integer beyond 64 bits, nesting deeper than
// limits::kMaxValueDepth).
Value from_json(const nlohmann::ordered_json& j);

// UTF-8 <-> code points (Python strings index code points).
std::u32string decode_utf8(const std::string& s);
size_t count_chars(const std::string& s);  // decode_utf8(s).size(), without decoding
std::string encode_utf8(const std::u32string& s);  // checks the string limit
inline size_t utf8_width(char32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }
void append_utf8(std::string& out, char32_t c);  // no limit checked: the caller counted
bool is_py_space(char32_t c);  // str.isspace()

}  // namespace vkllm::jinja
