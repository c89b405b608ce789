// Splits a template into tokens as Python jinja2's lexer does with trim_blocks and
// lstrip_blocks on: text between tags, tag delimiters and the expression tokens inside tags.
// Whitespace control (`{%-`, `-%}`, `{%+`, `+%}`), comments and `{% raw %}` are handled here, so
// the parser sees only text, expressions and statements.
#pragma once

#include <string>
#include <vector>

namespace vkllm::jinja {

enum class Tok { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, End };

struct Token {
    Tok type;
    std::string text;  // Text: the text; String: the decoded value; others: as written
    size_t offset;     // where it starts in the (newline-normalised) source
};

struct Source {
    std::string text;                 // newlines normalised, one trailing newline dropped
    std::vector<size_t> line_starts;  // offsets of the first byte of every line
    explicit Source(const std::string& raw);
    // 1-based line and column (in characters) of an offset.
    void position(size_t offset, int& line, int& column) const;
};

std::vector<Token> tokenize(const Source& source);

}  // namespace vkllm::jinja
