// Python's str methods and the string operations jinja2's filters are made of, on UTF-8 text
// (indices and lengths count characters, as Python does).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "template/value.h"

namespace vkllm::jinja {

std::string html_escape(const std::string& s);  // markupsafe's escape()
// Case mapping of ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic; other text unchanged.
std::string upper(const std::string& s);
std::string lower(const std::string& s);
std::string capitalize(const std::string& s);
std::string py_title(const std::string& s);     // str.title()
std::string jinja_title(const std::string& s);  // the title filter
// str.strip/lstrip/rstrip: whitespace, or any character of `chars` (a str or None).
std::string strip(const std::string& s, const Value* chars, bool left, bool right);
List split(const std::string& s, const Value* sep, int64_t maxsplit, bool from_right);
std::string replace(const std::string& s, const std::string& from, const std::string& to, int64_t count);
std::vector<std::string> splitlines(const std::string& s);
bool is_str_method(const std::string& name);
// `s.name(args)` for the str methods is_str_method() names.
Value call_str_method(const std::string& s, const std::string& name, const Args& a);

}  // namespace vkllm::jinja
