// jinja2's filters and tests.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "template/budget.h"
#include "template/builtins.h"
#include "template/builtins_util.h"
#include "template/strings.h"

namespace vkllm::jinja {

namespace {

// "a.b.0": jinja2's attribute getter for map/selectattr/sort/... (items first, then attributes).
Value get_path(const Value& v, const std::string& path) {
    charge(path.size());
    Value cur = v;
    size_t start = 0;
    while (true) {
        size_t dot = path.find('.', start);
        std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        bool digits = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
        cur = get_item(cur, digits ? Value::from(*parse_int(part)) : Value::from(part));
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
    if (!case_sensitive && v.is_string()) return Value::from(lower(v.string()));
    return v;
}

Value do_sort(const Value& input, const Args& a) {
    bool reverse = arg_bool(a, 0, "reverse", false), cs = arg_bool(a, 1, "case_sensitive", false);
    const Value* attr = a.get(2, "attribute");
    List items = iterate(input);
    charge(items.size() * 2 * limits::kValueWork);
    std::vector<std::pair<Value, Value>> keyed;
    for (auto& x : items) keyed.emplace_back(sort_key(attr && !attr->is_none() ? get_path(x, to_str(*attr)) : x, cs), x);
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& p, const auto& q) {
        return reverse ? compare(q.first, p.first) < 0 : compare(p.first, q.first) < 0;
    });
    List out;
    for (auto& [k, x] : keyed) out.push_back(x);
    return Value::from(std::move(out));
}

// jinja2's indent filter: `width` spaces (or the string `width`) before every line but the
// first (and the first too with `first`), empty lines too with `blank`.
std::string indent(const std::string& s, const Value* width, bool first, bool blank) {
    // Python's ' ' * width: none for a width below 1.
    const int64_t n = width && !width->is_string() ? as_int(*width, "width") : 4;
    if (!(width && width->is_string())) check_string_size(uint64_t(std::max<int64_t>(n, 0)));
    const std::string pad = width && width->is_string() ? width->string() : std::string(size_t(std::max<int64_t>(n, 0)), ' ');
    const std::vector<std::string> lines = splitlines(s + "\n");  // one line at least
    auto padded = [&](size_t i) { return (i == 0 ? first : blank || !lines[i].empty()); };
    // The result's size before it is built: the text, its newlines and the pads.
    uint64_t size = 0;
    for (size_t i = 0; i < lines.size(); ++i)
        size = add_sat(add_sat(size, lines[i].size() + (i ? 1 : 0)), padded(i) ? pad.size() : 0);
    check_string_size(size);
    charge_string(size);
    std::string out;
    out.reserve(size_t(size));
    for (size_t i = 0; i < lines.size(); ++i) {
        if (i) out += '\n';
        if (padded(i)) out += pad;
        out += lines[i];
    }
    return out;
}

// jinja2's int filter: int(value), else int(float(value)), else the default. A float's
// conversion raises for infinity (Python's OverflowError, which the filter lets through) and
// gives the default for NaN (a ValueError, which it catches).
Value to_int(const Value& v, const Args& a) {
    if (v.is_undefined()) fail_undefined(v);  // int(Undefined) raises
    const Value* def = a.get(0, "default");
    Value fallback = def ? *def : Value::from(int64_t(0));
    const int64_t base = a.get(1, "base") ? as_int(*a.get(1, "base"), "base") : 10;
    auto from_float = [&](double d) { return std::isnan(d) ? fallback : Value::from(float_to_int(d)); };
    if (v.kind == Kind::Int) return v;
    if (v.kind == Kind::Bool) return Value::from(int64_t(v.boolean));
    if (v.kind == Kind::Float) return from_float(v.real);
    if (v.is_string()) {
        std::string s = strip(v.string(), nullptr, true, true), digits;
        for (char c : s)
            if (c != '_') digits += c;
        if (base >= 0 && base <= 36)
            if (std::optional<int64_t> i = parse_int(digits, int(base))) return Value::from(*i);
        char* end = nullptr;
        double d = std::strtod(digits.c_str(), &end);
        if (!digits.empty() && end && *end == 0) return from_float(d);
    }
    return fallback;
}

Value tojson(const Value& v, const Args& a) {
    // HF: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
    bool ascii = arg_bool(a, 0, "ensure_ascii", false);
    const Value* ind = a.get(1, "indent");
    // json.dumps indents by ' ' * indent: a negative indent is no spaces, but still newlines.
    int64_t indent = ind && !ind->is_none() ? std::max<int64_t>(as_int(*ind, "indent"), 0) : -1;
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
             const int64_t i = as_int(v, "abs argument");
             if (i == INT64_MIN) type_error("integer overflow in abs (integers are 64-bit here)");
             return Value::from(i < 0 ? -i : i);
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
                 std::string s = strip(v.string(), nullptr, true, true);
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
             const std::string s = sep ? to_str(*sep) : "";
             const List items = iterate(v);
             // The separators alone may cross the limit: known before any item is written.
             if (!items.empty()) check_string_size(mul_sat(items.size() - 1, s.size()));
             std::string out;
             for (size_t i = 0; i < items.size(); ++i) {
                 if (i) append_checked(out, s);
                 append_checked(out, to_str(attr && !attr->is_none() ? get_path(items[i], to_str(*attr)) : items[i]));
             }
             return Value::from(std::move(out));
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
                 std::u32string u = decode_utf8(v.string());
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
             const std::string text = to_str(v);
             charge(text.size());
             for (char c : text) {
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
        {"filter", [](const Value& v, const Args&) { return v.is_string() && has_filter(v.string()); }},
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
        {"test", [](const Value& v, const Args&) { return v.is_string() && has_test(v.string()); }},
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

}  // namespace vkllm::jinja
