// Helpers shared by the builtins' source files: argument checks and conversions with Python's
// error messages.
#pragma once

#include <cstdint>
#include <string>

#include "template/value.h"

namespace vkllm::jinja {

[[noreturn]] void type_error(const std::string& message);
int64_t as_int(const Value& v, const char* what);
double as_double(const Value& v);
const std::string& as_string(const Value& v, const char* what);
// Positional argument `i` or keyword `name` as a truth value; `def` when absent.
bool arg_bool(const Args& a, size_t i, const char* name, bool def);
// A string result that stays "safe" (a markupsafe.Markup) when the string it came from was.
Value keep_safe(const Value& from, Value result);
int64_t py_len(const Value& v);  // len(v)
Value pairs(const Dict& d);     // d.items(): (key, value) tuples

}  // namespace vkllm::jinja
