#include "template/builtins.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "template/budget.h"
#include "template/builtins_util.h"
#include "template/limits.h"
#include "template/strings.h"

namespace vkllm::jinja {

namespace {

// a + b, the string limit checked before the copy.
std::string concat(const std::string& a, const std::string& b) {
    const uint64_t n = add_sat(a.size(), b.size());
    check_string_size(n);
    charge_string(n);
    std::string out;
    out.reserve(size_t(n));
    out += a;
    out += b;
    return out;
}

// The value of a %d field: an int as it is, a float as int() makes it.
int64_t format_int(const Value& v) {
    if (v.kind == Kind::Int || v.kind == Kind::Bool) return as_int(v, "%d format");
    if (v.kind == Kind::Float) return float_to_int(v.real);
    if (v.is_undefined()) fail_undefined(v);
    type_error("%d format: a real number is required, not " + type_name(v));
}

// strftime into a buffer that grows until the text fits, up to a cap: a format's text is
// short, so a longer one is a template's mistake (or an attack), not a date.
std::string format_time(const std::string& format, const std::tm& now) {
    constexpr size_t kMaxBytes = size_t(1) << 20;
    // A trailing character makes the text never empty, so strftime's 0 always means "too small".
    const std::string fmt = format + "|";
    std::string buf(std::clamp<size_t>(fmt.size() * 2, 256, kMaxBytes), '\0');
    while (true) {
        const size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &now);
        if (n > 0) {
            buf.resize(n - 1);
            return buf;
        }
        if (buf.size() >= kMaxBytes)
            throw Error("strftime_now text too long (limit: " + std::to_string(kMaxBytes) + " bytes)");
        buf.resize(std::min(buf.size() * 2, kMaxBytes));
    }
}

// ---- methods ----

const std::set<std::string> kDictMethods = {"get", "items", "keys", "values"};
const std::set<std::string> kListMethods = {"index", "count"};
// Methods that would change a list or dict: HF's ImmutableSandboxedEnvironment forbids them.
const std::set<std::string> kUnsafeList = {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"};
const std::set<std::string> kUnsafeDict = {"clear", "pop", "popitem", "setdefault", "update"};


Value call_dict_method(const Value& self, const std::string& name, const Args& a) {
    const Dict& d = *self.dict;
    if (name == "get") {
        if (a.positional.empty()) type_error("get expected at least 1 argument");
        const Value* def = a.get(1, "default");
        const Value* v = d.find(a.positional[0]);
        return v ? *v : def ? *def : Value::none();
    }
    if (name == "items") return pairs(d);
    charge(d.items.size() * limits::kValueWork);
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
        if (self.is_string()) return keep_safe(self, call_str_method(self.string(), name, a));
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
            if (is_str_method(name)) return method(obj, name);
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
                std::u32string u = decode_utf8(obj.string());
                int64_t n = int64_t(u.size());
                if (i < 0) i += n;
                if (i >= 0 && i < n) return Value::from(encode_utf8(u.substr(size_t(i), 1)));
            }
        }
    }
    if (key.is_string()) return get_attr(obj, key.string());
    return Value::undefined(object_name(obj) + " has no element " + repr(key));
}

Value slice(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
    if (obj.is_undefined()) fail_undefined(obj);
    int64_t step = step_v.is_none() || step_v.is_undefined() ? 1 : as_int(step_v, "slice step");
    if (step == 0) type_error("slice step cannot be zero");
    std::u32string u;
    int64_t n;
    if (obj.is_string()) {
        u = decode_utf8(obj.string());
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
    // The indices start, start + step, ... before stop; none of them overflows, as all lie in
    // [-1, n] and the loop stops at the first past stop.
    auto each = [&](auto&& take) {
        for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
            take(size_t(i));
            if (step > 0 ? stop - i <= step : i - stop <= -step) break;
            i += step;
        }
    };
    if (obj.is_string()) {
        std::u32string out;
        each([&](size_t i) { out += u[i]; });
        return Value::from(encode_utf8(out));
    }
    List out;
    each([&](size_t i) { out.push_back((*obj.list)[i]); });
    charge(out.size() * limits::kValueWork);
    Value v = Value::from(std::move(out));
    v.tuple = obj.tuple;
    return v;
}

bool contains(const Value& c, const Value& item) {
    switch (c.kind) {
        case Kind::Undefined: return false;
        case Kind::String:
            if (!item.is_string()) type_error("'in <string>' requires string as left operand, not " + type_name(item));
            charge_search(c.string().size(), item.string().size());
            return c.string().find(item.string()) != std::string::npos;
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
            if (!a.safe && !b.safe) return Value::from(concat(a.string(), b.string()));
            // Markup + str escapes the plain side (HTML), and the result is Markup.
            Value v = Value::from(concat(a.safe ? a.string() : html_escape(a.string()), b.safe ? b.string() : html_escape(b.string())));
            v.safe = true;
            return v;
        }
        if (a.is_list() && !a.generator) {
            if (!b.is_list() || b.generator || a.tuple != b.tuple)
                type_error("can only concatenate " + type_name(a) + " (not \"" + type_name(b) + "\") to " + type_name(a));
            // Both lists are copied: rebuilding a list by `+` in a loop costs its square.
            const uint64_t n = add_sat(a.list->size(), b.list->size());
            check_list_size(n);
            charge(n * limits::kValueWork);
            List l;
            l.reserve(size_t(n));
            l.insert(l.end(), a.list->begin(), a.list->end());
            l.insert(l.end(), b.list->begin(), b.list->end());
            Value v = Value::from(std::move(l));
            v.tuple = a.tuple;
            return v;
        }
    }
    if (op == "*") {
        const Value* seq = a.is_string() || a.is_list() ? &a : b.is_string() || b.is_list() ? &b : nullptr;
        if (seq) {
            const Value& n = seq == &a ? b : a;
            if (n.kind != Kind::Int && n.kind != Kind::Bool) return unsupported();
            int64_t k = std::max<int64_t>(0, n.kind == Kind::Bool ? n.boolean : n.integer);
            const size_t unit = seq->is_string() ? seq->string().size() : seq->list->size();
            const size_t limit = seq->is_string() ? limits::kMaxStringBytes : limits::kMaxListItems;
            if (unit > 0 && uint64_t(k) > limit / unit)
                throw Error(std::string(seq->is_string() ? "string" : "list") + " repetition too large (limit: " +
                            std::to_string(limit) + (seq->is_string() ? " bytes)" : " items)"));
            const uint64_t size = uint64_t(k) * unit;  // fits: checked against the limit above
            if (seq->is_string()) {
                charge_string(size);
                std::string out;
                out.reserve(size_t(size));
                for (int64_t i = 0; i < k; ++i) out += seq->string();
                return Value::from(std::move(out));
            }
            charge(size * limits::kValueWork);
            List l;
            l.reserve(size_t(size));
            for (int64_t i = 0; i < k; ++i) l.insert(l.end(), seq->list->begin(), seq->list->end());
            Value v = Value::from(std::move(l));
            v.tuple = seq->tuple;
            return v;
        }
    }
    if (op == "%" && a.is_string()) {  // printf-style "%s"/"%d" with one value or a list of them
        const List single{b};
        const List& vals = b.is_list() ? *b.list : single;
        std::string out;
        size_t k = 0;
        for (size_t i = 0; i < a.string().size(); ++i) {
            char c = a.string()[i];
            if (c != '%' || i + 1 >= a.string().size()) { out += c; continue; }
            char f = a.string()[++i];
            if (f == '%') { out += '%'; continue; }
            if (k >= vals.size()) type_error("not enough arguments for format string");
            const Value& v = vals[k++];
            if (f == 's') append_checked(out, to_str(v));
            else if (f == 'r') append_checked(out, repr(v));
            else if (f == 'd' || f == 'i') append_checked(out, std::to_string(format_int(v)));
            else type_error(std::string("unsupported format character '") + f + "'");
        }
        if (k < vals.size()) type_error("not all arguments converted during string formatting");
        return Value::from(std::move(out));
    }
    if (!a.is_number() || !b.is_number()) return unsupported();
    bool ints = a.kind != Kind::Float && b.kind != Kind::Float;
    if (ints) {
        int64_t x = a.kind == Kind::Bool ? a.boolean : a.integer, y = b.kind == Kind::Bool ? b.boolean : b.integer;
        // Integers are 64-bit here (Python's are unbounded): a result that does not fit is an error.
        int64_t r = 0;
        auto overflow = [&]() -> void { throw Error("integer overflow in '" + op + "' (integers are 64-bit here)"); };
        if (op == "+") {
            if (__builtin_add_overflow(x, y, &r)) overflow();
            return Value::from(r);
        }
        if (op == "-") {
            if (__builtin_sub_overflow(x, y, &r)) overflow();
            return Value::from(r);
        }
        if (op == "*") {
            if (__builtin_mul_overflow(x, y, &r)) overflow();
            return Value::from(r);
        }
        if (op == "/") {
            if (y == 0) type_error("division by zero");
            return Value::from(double(x) / double(y));
        }
        if (op == "//" || op == "%") {
            if (y == 0) type_error("integer division or modulo by zero");
            if (x == INT64_MIN && y == -1) overflow();
            int64_t q = x / y;
            r = x % y;
            if (r != 0 && ((r < 0) != (y < 0))) { q -= 1; r += y; }  // Python floors
            return Value::from(op == "//" ? q : r);
        }
        if (op == "**") {
            if (y < 0 && x == 0) type_error("0.0 cannot be raised to a negative power");
            if (y < 0) return Value::from(std::pow(double(x), double(y)));
            int64_t p = 1, base = x;  // by squaring: y may be huge when |x| <= 1
            for (int64_t e = y; e > 0; e >>= 1) {
                if ((e & 1) && __builtin_mul_overflow(p, base, &p)) overflow();
                if (e > 1 && __builtin_mul_overflow(base, base, &base)) overflow();
            }
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
        // The length in 128 bits: stop - start may not fit in 64.
        const __int128 span = step > 0 ? __int128(stop) - start : __int128(start) - stop;
        const __int128 magnitude = step > 0 ? __int128(step) : -__int128(step);
        const __int128 length = span <= 0 ? 0 : (span + magnitude - 1) / magnitude;
        if (length > __int128(limits::kMaxListItems))
            throw Error("range too long (limit: " + std::to_string(limits::kMaxListItems) + " items)");
        charge(uint64_t(length) * limits::kValueWork);
        List l;
        l.reserve(size_t(length));
        for (int64_t k = 0; k < int64_t(length); ++k) l.push_back(Value::from(int64_t(start + __int128(k) * step)));
        return Value::from(std::move(l));
    }));
    g.set("dict", Value::function("dict", [](const Args& a) {
        Dict d;
        if (!a.positional.empty()) {
            if (!a.positional[0].is_dict()) type_error("dict() takes a mapping and keyword arguments");
            charge(a.positional[0].dict->items.size() * limits::kValueWork);
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
        return Value::from(format_time(as_string(a.positional[0], "format"), now));
    }));
    return g;
}

}  // namespace vkllm::jinja
