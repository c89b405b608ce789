// GBNF (llama.cpp's grammar format) parsed into rules for GbnfMatcher (gbnf_matcher.h).
//
// Supported: rules `name ::= ...` (names of letters, digits, '-' and '_'; `root` is the start),
// sequences, alternatives `|`, groups `( ... )`, string literals "..." and character classes
// [a-z0-9_] / negated [^"\\] with the escapes \n \r \t \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH,
// `.` (any code point), repetition `*` `+` `?` `{m}` `{m,}` `{m,n}` (m, n at most
// kGbnfMaxRepetition), and `#` comments to the end of the line. A rule ends at the end of its
// line unless a group is open or the line ends in `|`. Refused with the line and column: an
// undefined rule, a rule defined twice, no `root`, left recursion (direct or through rules
// that can match nothing), a rule with no finite match (root ::= "a" root), a character class
// that matches nothing, llama.cpp's token references <...>, and any other syntax error. So
// every text the matcher accepts can still be completed.
//
// Groups and repetitions become generated rules, as in llama.cpp: x* is R ::= x R | (empty),
// x{2,4} is x x R2 with R2 ::= x R1 | (empty) and R1 ::= x | (empty).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vkllm/grammar.h"

namespace vkllm::sampling {

using GbnfError = vkllm::GrammarError;

constexpr int kGbnfMaxRepetition = 1000;

// One symbol of a sequence: a reference to a rule, or one code point from a set.
struct GbnfElement {
    int rule = -1;  // >= 0: a reference to rules[rule]; else a character
    // Character: inclusive code point ranges, sorted and merged; `negated`: any code point
    // outside them (`.` is a negated empty set).
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    bool negated = false;

    bool matches(uint32_t cp) const;
    // Whether some code point in [lo, hi] matches.
    bool matches_any(uint32_t lo, uint32_t hi) const;
    bool operator==(const GbnfElement&) const = default;
};

using GbnfSequence = std::vector<GbnfElement>;

struct GbnfRule {
    std::string name;                        // as written; generated rules: "name_N"
    std::vector<GbnfSequence> alternatives;  // an empty sequence matches the empty text
    int line = 0, column = 0;                // where it is defined (generated: its group or repetition)
};

struct GbnfGrammar {
    std::vector<GbnfRule> rules;
    int root = 0;

    // Throws GbnfError (line and column of the fault).
    static GbnfGrammar parse(std::string_view text);
};

}  // namespace vkllm::sampling
