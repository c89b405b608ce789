#include "template/builtins_util.h"

#include "template/budget.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace vkllm::jinja {

[[noreturn]] void type_error(const std::string& message) { throw Error(message); }

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

int64_t float_to_int(double d) {
    if (std::isnan(d)) type_error("cannot convert float NaN to integer");
    if (std::isinf(d)) type_error("cannot convert float infinity to integer");
    // [-2^63, 2^63) holds exactly the doubles that truncate to an int64 (casting any other is
    // undefined behaviour).
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
        type_error(float_repr(d) + " does not fit a 64-bit integer (integers are 64-bit here)");
    return int64_t(d);
}

std::optional<int64_t> parse_int(const std::string& digits, int base) {
    if (digits.empty() || std::isspace(static_cast<unsigned char>(digits[0]))) return std::nullopt;
    errno = 0;
    char* end = nullptr;
    const long long i = std::strtoll(digits.c_str(), &end, base);
    if (end == digits.c_str() || *end != 0) return std::nullopt;
    if (errno == ERANGE)
        type_error("the integer " + (digits.size() > 40 ? digits.substr(0, 40) + "..." : digits) + " does not fit a 64-bit integer (integers are 64-bit here)");
    return int64_t(i);
}

const std::string& as_string(const Value& v, const char* what) {
    if (v.is_string()) return v.string();
    if (v.is_undefined()) fail_undefined(v);
    type_error(std::string(what) + " must be str, not " + type_name(v));
}

bool arg_bool(const Args& a, size_t i, const char* name, bool def) {
    const Value* v = a.get(i, name);
    return v ? truthy(*v) : def;
}

Value pairs(const Dict& d) {
    charge(d.items.size() * 3 * limits::kValueWork);  // a pair and its two values per item
    List l;
    for (const auto& [k, v] : d.items) l.push_back(Value::pair(k, v));
    return Value::from(std::move(l));
}

int64_t py_len(const Value& v) {
    switch (v.kind) {
        case Kind::Undefined: return 0;
        case Kind::String: return int64_t(count_chars(v.string()));
        case Kind::List:
            if (v.generator) type_error("object of type 'generator' has no len()");
            return int64_t(v.list->size());
        case Kind::Dict: return int64_t(v.dict->items.size());
        default: type_error("object of type '" + type_name(v) + "' has no len()");
    }
}

}  // namespace vkllm::jinja
