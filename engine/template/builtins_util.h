// Helpers shared by the builtins' source files: argument checks and conversions with Python's
// error messages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "template/value.h"

namespace vkllm::jinja {

[[noreturn]] void type_error(const std::string& message);
int64_t as_int(const Value& v, const char* what);
double as_double(const Value& v);
// Python's int(d) for a float, with its errors for NaN and infinity; a value beyond 64 bits
// is an error too (Python's integers are unbounded, these are not).
int64_t float_to_int(double d);
// The decimal integer `digits` (an optional sign, then digits), or an error saying it does
// not fit 64 bits; nullopt when it is not an integer at all.
std::optional<int64_t> parse_int(const std::string& digits, int base = 10);
const std::string& as_string(const Value& v, const char* what);
// Positional argument `i` or keyword `name` as a truth value; `def` when absent.
bool arg_bool(const Args& a, size_t i, const char* name, bool def);
// A string result that stays "safe" (a markupsafe.Markup) when the string it came from was.
Value keep_safe(const Value& from, Value result);
int64_t py_len(const Value& v);  // len(v)
Value pairs(const Dict& d);     // d.items(): (key, value) tuples

}  // namespace vkllm::jinja
