// A small backtracking regular-expression matcher over Unicode code points, written for the
// pre-tokenizer split patterns of Hugging Face tokenizers (std::regex has no \p{L}).
//
// Syntax: literals, '.', classes [...] / [^...] with ranges, \s \S (White_Space), \d \D \w \W
// (ASCII, as in ECMAScript), \p{X} \P{X} (general category by one- or two-letter name: L, Lu,
// N, Nd, ...), \r \n \t \f \v \0 \xHH \x{H...} \uHHHH and escaped punctuation; groups (...),
// (?:...), (?i:...) (ASCII case folding); lookahead (?=...) (?!...); quantifiers * + ? {n}
// {n,} {n,m}, greedy or lazy (trailing ?); alternation |; anchors ^ $ \b \B.
// Semantics are Perl's: the leftmost match wins, alternatives are tried in order, quantifiers
// backtrack. Unsupported syntax (lookbehind, backreferences, possessive quantifiers, nested
// classes) is rejected when the pattern is compiled.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vkllm::tokenizer {

struct RegexError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class Regex {
public:
    explicit Regex(std::string_view pattern);  // UTF-8; throws RegexError naming the problem
    ~Regex();
    Regex(Regex&&) noexcept;
    Regex& operator=(Regex&&) noexcept;

    struct Match {
        size_t begin;
        size_t end;  // exclusive
    };
    // The leftmost match that starts at or after `from` inside the window text[begin, end).
    // Code points outside the window are invisible: ^, $, \b and lookaheads see its edges.
    std::optional<Match> search(const uint32_t* text, size_t begin, size_t end, size_t from) const;

    const std::string& pattern() const { return pattern_; }

    struct Program;  // compiled form (regex.cpp)

private:
    std::string pattern_;
    std::unique_ptr<Program> program_;
};

}  // namespace vkllm::tokenizer
