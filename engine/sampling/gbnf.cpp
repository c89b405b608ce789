// GbnfGrammar::parse: a recursive-descent parser over the GBNF text (see gbnf.h for the
// language), then checks that every rule is defined, `root` exists, and no rule is left
// recursive (the matcher expands rule references eagerly, which left recursion would loop).
#include "sampling/gbnf.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace vkllm::sampling {

bool GbnfElement::matches(uint32_t cp) const { return matches_any(cp, cp); }

bool GbnfElement::matches_any(uint32_t lo, uint32_t hi) const {
    if (!negated) {
        for (const auto& [a, b] : ranges)
            if (a <= hi && b >= lo) return true;
        return false;
    }
    // Negated: some code point of [lo, hi] lies outside every range (they are sorted and merged).
    uint32_t next = lo;
    for (const auto& [a, b] : ranges) {
        if (a > next) break;
        if (b >= next) {
            if (b >= hi) return false;
            next = b + 1;
        }
    }
    return next <= hi;
}

namespace {

bool is_word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class Parser {
public:
    explicit Parser(std::string_view text) : t_(text) {}

    GbnfGrammar run() {
        skip_space(true);
        while (pos_ < t_.size()) parse_rule();
        for (size_t r = 0; r < g_.rules.size(); ++r)
            if (!defined_[r]) fail_at(first_use_[r], "undefined rule '" + g_.rules[r].name + "'");
        const auto root = ids_.find("root");
        if (root == ids_.end()) fail_at(t_.size(), "no rule named 'root' (the start of the grammar)");
        g_.root = root->second;
        check_left_recursion();
        check_productive();
        return std::move(g_);
    }

private:
    // The line and column (from 1; columns count characters) of byte offset `at`.
    std::pair<int, int> location(size_t at) const {
        int line = 1, column = 1;
        for (size_t i = 0; i < at && i < t_.size(); ++i) {
            if (t_[i] == '\n') {
                ++line;
                column = 1;
            } else if ((uint8_t(t_[i]) & 0xC0) != 0x80) {
                ++column;
            }
        }
        return {line, column};
    }
    [[noreturn]] void fail_at(size_t at, const std::string& reason) const {
        const auto [line, column] = location(at);
        throw GbnfError(line, column, reason);
    }
    [[noreturn]] void fail(const std::string& reason) const { fail_at(pos_, reason); }

    char peek(size_t ahead = 0) const { return pos_ + ahead < t_.size() ? t_[pos_ + ahead] : '\0'; }
    bool at_end() const { return pos_ >= t_.size(); }

    // Spaces, tabs and comments; newlines too where `newlines` (inside a group, after `|` or `::=`).
    void skip_space(bool newlines) {
        while (!at_end()) {
            const char c = peek();
            if (c == ' ' || c == '\t') {
                ++pos_;
            } else if (c == '#') {
                while (!at_end() && peek() != '\n') ++pos_;
            } else if (newlines && (c == '\n' || c == '\r')) {
                ++pos_;
            } else {
                break;
            }
        }
    }

    std::string_view word() {
        const size_t start = pos_;
        while (!at_end() && is_word_char(peek())) ++pos_;
        return t_.substr(start, pos_ - start);
    }

    int rule_id(std::string_view name, size_t used_at) {
        const auto [it, added] = ids_.emplace(std::string(name), int(g_.rules.size()));
        if (added) {
            g_.rules.push_back({std::string(name), {}, 0, 0});
            defined_.push_back(false);
            first_use_.push_back(used_at);
        }
        return it->second;
    }

    // A rule made for a group or repetition at `at`.
    int generated_rule(const std::string& base, size_t at, std::vector<GbnfSequence> alternatives) {
        const int id = int(g_.rules.size());
        g_.rules.push_back({base + "_" + std::to_string(id), std::move(alternatives), 0, 0});
        set_position(g_.rules.back(), at);
        defined_.push_back(true);
        first_use_.push_back(at);
        return id;
    }

    void set_position(GbnfRule& r, size_t at) const { std::tie(r.line, r.column) = location(at); }

    void parse_rule() {
        const size_t start = pos_;
        const std::string_view name = word();
        if (name.empty()) fail("expected a rule name (letters, digits, '-', '_')");
        skip_space(false);
        if (t_.substr(pos_, 3) != "::=") fail("expected '::=' after the rule name '" + std::string(name) + "'");
        pos_ += 3;
        skip_space(true);
        const int id = rule_id(name, start);
        if (defined_[size_t(id)]) fail_at(start, "rule '" + std::string(name) + "' is defined twice");
        defined_[size_t(id)] = true;
        rule_name_ = std::string(name);
        std::vector<GbnfSequence> alts = parse_alternatives(false);
        GbnfRule& r = g_.rules[size_t(id)];
        r.alternatives = std::move(alts);
        set_position(r, start);
        if (!at_end() && peek() != '\n' && peek() != '\r') fail(std::string("unexpected '") + peek() + "'");
        skip_space(true);
    }

    std::vector<GbnfSequence> parse_alternatives(bool nested) {
        std::vector<GbnfSequence> alts;
        alts.push_back(parse_sequence(nested));
        while (peek() == '|') {
            ++pos_;
            skip_space(true);
            alts.push_back(parse_sequence(nested));
        }
        return alts;
    }

    GbnfSequence parse_sequence(bool nested) {
        GbnfSequence seq;
        size_t last_start = 0;  // where the last symbol's elements begin in seq
        bool has_last = false;
        while (!at_end()) {
            const size_t at = pos_;
            const char c = peek();
            if (c == '"') {
                ++pos_;
                last_start = seq.size();
                has_last = true;
                while (peek() != '"') {
                    if (at_end() || peek() == '\n') fail_at(at, "unterminated string literal");
                    const uint32_t cp = parse_char();
                    seq.push_back({-1, {{cp, cp}}, false});
                }
                ++pos_;
            } else if (c == '[') {
                ++pos_;
                last_start = seq.size();
                has_last = true;
                seq.push_back(parse_class(at));
            } else if (c == '.') {
                ++pos_;
                last_start = seq.size();
                has_last = true;
                seq.push_back({-1, {}, true});
            } else if (is_word_char(c)) {
                const std::string_view name = word();
                last_start = seq.size();
                has_last = true;
                seq.push_back({rule_id(name, at), {}, false});
            } else if (c == '(') {
                ++pos_;
                skip_space(true);
                std::vector<GbnfSequence> alts = parse_alternatives(true);
                if (peek() != ')') fail(at_end() ? "unclosed '(' (opened at " + where(at) + ")" : "expected ')'");
                ++pos_;
                last_start = seq.size();
                has_last = true;
                seq.push_back({generated_rule(rule_name_, at, std::move(alts)), {}, false});
            } else if (c == '*' || c == '+' || c == '?' || c == '{') {
                if (!has_last) fail(std::string("'") + c + "' repeats nothing: put it after a symbol");
                ++pos_;
                int min = 0, max = -1;
                if (c == '+') min = 1;
                if (c == '?') max = 1;
                if (c == '{') parse_bounds(min, max);
                repeat(seq, last_start, min, max, at);
                has_last = false;  // "a"** is an error, as in llama.cpp
            } else if (c == '<') {
                fail("token references (<...>) are not supported; write the text as a string literal");
            } else {
                break;  // the end of the sequence: '|', ')', a newline, or an error the caller names
            }
            skip_space(nested);
        }
        return seq;
    }

    std::string where(size_t at) const {
        const auto [line, column] = location(at);
        return std::to_string(line) + ":" + std::to_string(column);
    }

    void parse_bounds(int& min, int& max) {
        skip_space(true);
        auto number = [&]() {
            const size_t start = pos_;
            long v = 0;
            while (peek() >= '0' && peek() <= '9') {
                v = v * 10 + (peek() - '0');
                if (v > kGbnfMaxRepetition)
                    fail_at(start, "repetition count above " + std::to_string(kGbnfMaxRepetition));
                ++pos_;
            }
            if (pos_ == start) fail("expected a number in '{m,n}'");
            skip_space(true);
            return int(v);
        };
        min = number();
        max = min;
        if (peek() == ',') {
            ++pos_;
            skip_space(true);
            max = (peek() == '}') ? -1 : number();
        }
        if (peek() != '}') fail("expected '}' to close the repetition");
        ++pos_;
        if (max >= 0 && max < min) fail("repetition {" + std::to_string(min) + "," + std::to_string(max) + "}: the maximum is below the minimum");
    }

    // Replaces seq[from..] (one symbol) by min copies then the optional rest, as generated rules.
    void repeat(GbnfSequence& seq, size_t from, int min, int max, size_t at) {
        const GbnfSequence symbol(seq.begin() + long(from), seq.end());
        seq.resize(from);
        for (int i = 0; i < min; ++i) seq.insert(seq.end(), symbol.begin(), symbol.end());
        if (max < 0) {
            // R ::= symbol R | (empty)
            const int r = generated_rule(rule_name_, at, {});
            GbnfSequence more = symbol;
            more.push_back({r, {}, false});
            g_.rules[size_t(r)].alternatives = {more, {}};
            seq.push_back({r, {}, false});
        } else if (max > min) {
            // R_k ::= symbol R_(k-1) | (empty), R_1 ::= symbol | (empty): at most max - min more.
            int inner = -1;
            for (int k = 1; k <= max - min; ++k) {
                GbnfSequence more = symbol;
                if (inner >= 0) more.push_back({inner, {}, false});
                inner = generated_rule(rule_name_, at, {more, {}});
            }
            seq.push_back({inner, {}, false});
        }
    }

    GbnfElement parse_class(size_t at) {
        GbnfElement e;
        if (peek() == '^') {
            e.negated = true;
            ++pos_;
        }
        while (peek() != ']') {
            if (at_end() || peek() == '\n') fail_at(at, "unterminated character class");
            const uint32_t lo = parse_char();
            uint32_t hi = lo;
            if (peek() == '-' && peek(1) != ']' && peek(1) != '\n' && pos_ + 1 < t_.size()) {
                ++pos_;
                hi = parse_char();
                if (hi < lo) fail("character range with its end before its start");
            }
            e.ranges.push_back({lo, hi});
        }
        ++pos_;
        // Sorted and merged, for matches_any.
        std::sort(e.ranges.begin(), e.ranges.end());
        std::vector<std::pair<uint32_t, uint32_t>> merged;
        for (const auto& r : e.ranges) {
            if (!merged.empty() && r.first <= merged.back().second + 1)
                merged.back().second = std::max(merged.back().second, r.second);
            else
                merged.push_back(r);
        }
        e.ranges = std::move(merged);
        if (!e.matches_any(0, 0xD7FF) && !e.matches_any(0xE000, 0x10FFFF))  // surrogates are not characters
            fail_at(at, "the character class matches no character");
        return e;
    }

    // One character of a literal or class: an escape or a UTF-8 code point.
    uint32_t parse_char() {
        const size_t at = pos_;
        if (peek() == '\\') {
            ++pos_;
            const char c = peek();
            ++pos_;
            switch (c) {
                case 'n': return '\n';
                case 'r': return '\r';
                case 't': return '\t';
                case '\\': case '"': case '[': case ']': case '-': case '^': case '\'': return uint8_t(c);
                case 'x': return hex(2, at);
                case 'u': return hex(4, at);
                case 'U': return hex(8, at);
                default: fail_at(at, std::string("unknown escape '\\") + c + "'");
            }
        }
        const uint8_t b = uint8_t(peek());
        const int len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
        if (len == 0 || pos_ + size_t(len) > t_.size()) fail("invalid UTF-8 in the grammar");
        uint32_t cp = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
        for (int i = 1; i < len; ++i) {
            const uint8_t c = uint8_t(t_[pos_ + size_t(i)]);
            if ((c & 0xC0) != 0x80) fail("invalid UTF-8 in the grammar");
            cp = (cp << 6) | (c & 0x3F);
        }
        pos_ += size_t(len);
        return cp;
    }

    uint32_t hex(int digits, size_t at) {
        uint32_t v = 0;
        for (int i = 0; i < digits; ++i) {
            const char c = peek();
            const int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                        : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
            if (d < 0) fail_at(at, "escape needs " + std::to_string(digits) + " hex digits");
            v = v * 16 + uint32_t(d);
            ++pos_;
        }
        if (v > 0x10FFFF) fail_at(at, "escape beyond U+10FFFF");
        return v;
    }

    // A rule is left recursive when it can reach itself before matching a character: through
    // the first symbol of an alternative, or a later one when all before it can match nothing.
    void check_left_recursion() const {
        const size_t n = g_.rules.size();
        std::vector<bool> nullable(n, false);
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t r = 0; r < n; ++r) {
                if (nullable[r]) continue;
                for (const GbnfSequence& seq : g_.rules[r].alternatives) {
                    if (std::all_of(seq.begin(), seq.end(),
                                    [&](const GbnfElement& e) { return e.rule >= 0 && nullable[size_t(e.rule)]; })) {
                        nullable[r] = changed = true;
                        break;
                    }
                }
            }
        }
        std::vector<std::vector<int>> first(n);  // rules reachable before any character
        for (size_t r = 0; r < n; ++r)
            for (const GbnfSequence& seq : g_.rules[r].alternatives)
                for (const GbnfElement& e : seq) {
                    if (e.rule < 0) break;
                    first[r].push_back(e.rule);
                    if (!nullable[size_t(e.rule)]) break;
                }
        // Depth-first search for a cycle; `path` names it in the error.
        std::vector<int> state(n, 0);  // 0 new, 1 on the path, 2 done
        std::vector<int> path;
        auto visit = [&](auto&& self, int r) -> void {
            state[size_t(r)] = 1;
            path.push_back(r);
            for (int s : first[size_t(r)]) {
                if (state[size_t(s)] == 1) {
                    std::string cycle;
                    for (auto it = std::find(path.begin(), path.end(), s); it != path.end(); ++it)
                        cycle += g_.rules[size_t(*it)].name + " -> ";
                    const GbnfRule& rule = g_.rules[size_t(s)];
                    // Generated rules (groups, repetitions) are named after their rule: "expr_7".
                    throw GbnfError(rule.line, rule.column,
                                    "rule '" + rule.name + "' is left recursive (" + cycle + rule.name +
                                        "); write it with repetition instead, e.g. x ::= y (\"+\" y)*");
                }
                if (state[size_t(s)] == 0) self(self, s);
            }
            path.pop_back();
            state[size_t(r)] = 2;
        };
        for (size_t r = 0; r < n; ++r)
            if (state[r] == 0) visit(visit, int(r));
    }

    // Every rule must have a finite match: otherwise a text could reach a place from which it
    // can never be whole, and constrained generation would run into -n there.
    void check_productive() const {
        const size_t n = g_.rules.size();
        std::vector<bool> productive(n, false);
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t r = 0; r < n; ++r) {
                if (productive[r]) continue;
                for (const GbnfSequence& seq : g_.rules[r].alternatives) {
                    if (std::all_of(seq.begin(), seq.end(),
                                    [&](const GbnfElement& e) { return e.rule < 0 || productive[size_t(e.rule)]; })) {
                        productive[r] = changed = true;
                        break;
                    }
                }
            }
        }
        for (size_t r = 0; r < n; ++r)
            if (!productive[r])
                throw GbnfError(g_.rules[r].line, g_.rules[r].column,
                                "rule '" + g_.rules[r].name + "' never ends: every alternative refers to a rule that "
                                "never ends (give it one that does, e.g. x ::= \"a\" x | \"a\")");
    }

    std::string_view t_;
    size_t pos_ = 0;
    GbnfGrammar g_;
    std::map<std::string, int> ids_;
    std::vector<bool> defined_;
    std::vector<size_t> first_use_;
    std::string rule_name_;  // the rule being parsed, for generated rules' names
};

}  // namespace

GbnfGrammar GbnfGrammar::parse(std::string_view text) { return Parser(text).run(); }

}  // namespace vkllm::sampling
