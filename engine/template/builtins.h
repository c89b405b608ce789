// What the interpreter provides to templates besides syntax: attribute and item lookup (with
// Python's str/dict/list methods), jinja2's filters and tests (filters.cpp), and the globals HF
// templates use. Python's str methods themselves are in strings.h.
#pragma once

#include <ctime>
#include <string>

#include "template/value.h"

namespace vkllm::jinja {

// `obj.name`: a method of str/dict/list first, then a key (jinja2's getattr); a missing one is
// an Undefined carrying jinja2's message. An Undefined `obj` raises.
Value get_attr(const Value& obj, const std::string& name);
// `obj[key]`: a key or index first, then a method (jinja2's getitem).
Value get_item(const Value& obj, const Value& key);
// obj[start:stop:step] with Python's rules (each may be None).
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

bool has_filter(const std::string& name);
Value apply_filter(const std::string& name, const Value& input, const Args& args);
bool has_test(const std::string& name);
bool apply_test(const std::string& name, const Value& input, const Args& args);

// `a in b`.
bool contains(const Value& container, const Value& item);
// A binary operator: + - * / // % **.
Value arithmetic(const std::string& op, const Value& a, const Value& b);

// The globals: range, dict, namespace, raise_exception, strftime_now (formatting `now`).
Dict make_globals(const std::tm& now);

}  // namespace vkllm::jinja
