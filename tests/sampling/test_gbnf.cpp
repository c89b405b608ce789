// GbnfGrammar and GbnfMatcher: parsing (and its errors, with line and column), and which texts
// a grammar matches, fed whole and in every two-piece split (as tokens would come, UTF-8
// sequences split included): literals, classes, repetition bounds, alternation, recursion,
// UTF-8 classes, and llama.cpp's JSON grammar agreeing with JsonMatcher on samples.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sampling/gbnf.h"
#include "sampling/gbnf_matcher.h"
#include "sampling/json_grammar.h"
#include "sampling/json_matcher.h"

using namespace vkllm::sampling;

namespace {

std::shared_ptr<const GbnfGrammar> parse(const std::string& text) {
    return std::make_shared<const GbnfGrammar>(GbnfGrammar::parse(text));
}

enum class Match { No, Prefix, Whole, Closed };

// What `text` is to the grammar: not a prefix of any match, a prefix, a whole match, or a whole
// match that nothing can follow. Checked the same fed whole and split in two at every byte.
Match match(const std::shared_ptr<const GbnfGrammar>& g, const std::string& text) {
    auto classify = [](const GbnfMatcher& m, bool ok) {
        if (!ok) return Match::No;
        if (m.closed()) return Match::Closed;
        return m.complete() ? Match::Whole : Match::Prefix;
    };
    GbnfMatcher whole(g);
    const bool accepted = whole.accepts(text);
    const Match result = classify(whole, whole.feed(text));
    EXPECT_EQ(accepted, result != Match::No) << "accepts and feed disagree on '" << text << "'";
    for (size_t cut = 1; cut < text.size(); ++cut) {
        GbnfMatcher m(g);
        const std::string a = text.substr(0, cut), b = text.substr(cut);
        const bool ok = m.accepts(a) && m.feed(a) && m.accepts(b) && m.feed(b);
        EXPECT_EQ(classify(m, ok), result) << "'" << text << "' cut at " << cut;
    }
    return result;
}

bool whole(const std::shared_ptr<const GbnfGrammar>& g, const std::string& text) {
    const Match m = match(g, text);
    return m == Match::Whole || m == Match::Closed;
}

// The error parsing `text` gives: "LINE:COLUMN: reason".
std::string error_of(const std::string& text) {
    try {
        GbnfGrammar::parse(text);
    } catch (const GbnfError& e) {
        return e.what();
    }
    return "(parsed)";
}

TEST(Gbnf, LiteralsAndAlternatives) {
    const auto g = parse("root ::= (\"yes\" | \"no\") \".\"\n");
    EXPECT_EQ(match(g, "yes."), Match::Closed);
    EXPECT_EQ(match(g, "no."), Match::Closed);
    EXPECT_EQ(match(g, "ye"), Match::Prefix);
    EXPECT_EQ(match(g, "no"), Match::Prefix);
    EXPECT_EQ(match(g, "yes.x"), Match::No);
    EXPECT_EQ(match(g, "maybe"), Match::No);
    EXPECT_EQ(match(g, ""), Match::Prefix);
}

TEST(Gbnf, ClassesAndAny) {
    const auto g = parse("root ::= [a-cx] [^a-z\\n] . \"\\x41\\u00e9\\t\"");
    EXPECT_TRUE(whole(g, "aZ!A\xC3\xA9\t"));
    EXPECT_TRUE(whole(g, "x5\xE2\x82\xAC" "A\xC3\xA9\t"));
    EXPECT_EQ(match(g, "d"), Match::No);
    EXPECT_EQ(match(g, "ab"), Match::No);
    EXPECT_EQ(match(g, "a\n"), Match::No);
    EXPECT_EQ(match(g, "a5\n"), Match::Prefix);  // '.' is any code point, newline included
    EXPECT_EQ(match(g, "a5\nA\xC3\xA8"), Match::No);
}

TEST(Gbnf, RepetitionBounds) {
    const auto g = parse("root ::= \"a\"{2,4} \"b\"? [0-9]+ \"-\"*");
    EXPECT_EQ(match(g, "a"), Match::Prefix);
    EXPECT_EQ(match(g, "a1"), Match::No);
    EXPECT_TRUE(whole(g, "aa1"));
    EXPECT_TRUE(whole(g, "aaaab123--"));
    EXPECT_EQ(match(g, "aaaaa"), Match::No);
    EXPECT_EQ(match(g, "aab"), Match::Prefix);
    EXPECT_EQ(match(g, "aabb"), Match::No);
    EXPECT_EQ(match(g, "aa1-1"), Match::No);
    const auto exact = parse("root ::= [ab]{3}");
    EXPECT_EQ(match(exact, "aba"), Match::Closed);
    EXPECT_EQ(match(exact, "ab"), Match::Prefix);
    EXPECT_EQ(match(exact, "abab"), Match::No);
    const auto at_least = parse("root ::= (\"x\" \"y\"){2,}");
    EXPECT_EQ(match(at_least, "xyx"), Match::Prefix);
    EXPECT_EQ(match(at_least, "xyxy"), Match::Whole);
    EXPECT_EQ(match(at_least, "xyxyxy"), Match::Whole);
    EXPECT_EQ(match(at_least, "xyy"), Match::No);
    const auto group_literal = parse("root ::= \"ab\"* \"c\"");  // the whole literal repeats
    EXPECT_TRUE(whole(group_literal, "ababc"));
    EXPECT_EQ(match(group_literal, "abbc"), Match::No);
}

TEST(Gbnf, RecursionBalancedParentheses) {
    const auto g = parse(R"g(# balanced parentheses, then a full stop
root  ::= paren* "."
paren ::= "(" paren* ")"   # nested
)g");
    EXPECT_EQ(match(g, "(()(()))."), Match::Closed);
    EXPECT_EQ(match(g, "()()."), Match::Closed);
    EXPECT_EQ(match(g, "."), Match::Closed);
    EXPECT_EQ(match(g, "((("), Match::Prefix);
    EXPECT_EQ(match(g, "(()"), Match::Prefix);
    EXPECT_EQ(match(g, "())"), Match::No);
    EXPECT_EQ(match(g, "(."), Match::No);
    // Deep nesting is fine (right recursion does not build up the stacks).
    const std::string deep = std::string(300, '(') + std::string(300, ')') + ".";
    GbnfMatcher m(g);
    EXPECT_TRUE(m.feed(deep));
    EXPECT_TRUE(m.closed());
}

TEST(Gbnf, Utf8Classes) {
    const auto g = parse("root ::= [α-ω]+ [^\\x00-\\x7F] \"€\"");
    EXPECT_TRUE(whole(g, "αβγ\xF0\x9F\x98\x80€"));   // U+1F600 is outside ASCII
    EXPECT_EQ(match(g, "αβa"), Match::No);
    EXPECT_EQ(match(g, "Aα"), Match::No);
    EXPECT_EQ(match(g, "\xCE"), Match::Prefix);     // the first byte of α..ω
    EXPECT_EQ(match(g, "\xD0"), Match::No);         // U+0400..: no Greek small letter starts so
    EXPECT_EQ(match(g, "\xC0\x80"), Match::No);     // overlong
    EXPECT_EQ(match(g, "α\xED\xA0\x80"), Match::No); // a surrogate
    EXPECT_EQ(match(g, "α\xED\xA0"), Match::No);     // ... as soon as no other character can start so
    GbnfMatcher m(g);
    ASSERT_TRUE(m.feed("\xCE"));
    EXPECT_FALSE(m.complete());  // half a character is never whole
    EXPECT_FALSE(m.accepts("a"));
    EXPECT_TRUE(m.accepts("\xB1"));
}

TEST(Gbnf, EmptyMatchAndClosed) {
    const auto g = parse("root ::= \"a\"?");
    GbnfMatcher m(g);
    EXPECT_TRUE(m.complete());
    EXPECT_FALSE(m.closed());
    ASSERT_TRUE(m.feed("a"));
    EXPECT_TRUE(m.closed());
    EXPECT_FALSE(m.accepts("a"));
}

TEST(Gbnf, Errors) {
    EXPECT_EQ(error_of("root ::= foo\n"), "1:10: undefined rule 'foo'");
    EXPECT_EQ(error_of("item ::= \"x\"\n"), "2:1: no rule named 'root' (the start of the grammar)");
    EXPECT_EQ(error_of("root ::= \"a\"\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]\n").substr(0, 44),
              "2:1: rule 'expr' is left recursive (expr -> ");
    // Through a rule that can match nothing: still left recursion.
    EXPECT_NE(error_of("root ::= opt root \"x\" | \"y\"\nopt ::= \"-\"?\n").find("1:1: rule 'root' is left recursive"),
              std::string::npos);
    EXPECT_EQ(error_of("root ::= \"abc\n"), "1:10: unterminated string literal");
    EXPECT_EQ(error_of("root ::= [a-\n"), "1:10: unterminated character class");
    EXPECT_EQ(error_of("root ::= (\"a\" | \"b\""), "1:20: unclosed '(' (opened at 1:10)");
    EXPECT_EQ(error_of("root ::= * \"a\""), "1:10: '*' repeats nothing: put it after a symbol");
    EXPECT_EQ(error_of("root ::= \"a\"{3,2}"), "1:18: repetition {3,2}: the maximum is below the minimum");
    EXPECT_EQ(error_of("root ::= \"a\"{5000}").substr(0, 33), "1:14: repetition count above 1000");
    EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\"\n"), "2:1: rule 'root' is defined twice");
    EXPECT_EQ(error_of("root = \"a\""), "1:6: expected '::=' after the rule name 'root'");
    EXPECT_EQ(error_of("root ::= \"a\" ; \"b\""), "1:14: unexpected ';'");
    EXPECT_EQ(error_of("root ::= \"\\q\""), "1:11: unknown escape '\\q'");
    EXPECT_EQ(error_of("root ::= <[1000]>"), "1:10: token references (<...>) are not supported; write the text as a string literal");
    EXPECT_EQ(error_of("root ::= [z-a]"), "1:14: character range with its end before its start");
    EXPECT_EQ(error_of("root ::= \"a\" root\n"), "1:1: rule 'root' never ends: every alternative refers to a rule "
                                                "that never ends (give it one that does, e.g. x ::= \"a\" x | \"a\")");
    EXPECT_EQ(error_of("root ::= [^\\x00-\\U0010FFFF]"), "1:10: the character class matches no character");
    EXPECT_EQ(error_of("root ::= []"), "1:10: the character class matches no character");
    EXPECT_EQ(error_of("root ::= [\\uD800-\\uDFFF]"), "1:10: the character class matches no character");
    // Columns count characters, not bytes.
    EXPECT_EQ(error_of("root ::= \"é\" x"), "1:14: undefined rule 'x'");
}

TEST(Gbnf, AmbiguityIsBounded) {
    // After n 'a's a "b" may be owed for any k <= n of them: n + 1 ways, each with three next
    // symbols (an 'a' of either alternative, or a 'b'), so about 3n parses. The matcher
    // follows them up to its bound, then says so rather than slow down without limit.
    const auto g = parse("root ::= x\nx ::= \"a\" x \"b\" | \"a\" x | \"\"\n");
    GbnfMatcher m(g, 64);
    std::string error;
    int fed = 0;
    try {
        while (fed < 1000 && m.feed("a")) ++fed;
    } catch (const GbnfLimitError& e) {
        error = e.what();
    }
    EXPECT_NE(error.find("too ambiguous: more than 64 parses"), std::string::npos) << error;
    EXPECT_GE(fed, 18);  // 64 / 3 - 2
    EXPECT_LT(fed, 64);
    GbnfMatcher few(g, 64);
    ASSERT_TRUE(few.feed("aaab"));
    EXPECT_TRUE(few.complete());
    EXPECT_EQ(match(g, "aabbb"), Match::No);
    // Refused at parse time: a repetition of something that can match nothing loops.
    EXPECT_NE(error_of("root ::= (\"a\"* \"b\"?)* \"c\"").find("left recursive"), std::string::npos);
}

// llama.cpp's grammars/json.gbnf (JSON values, whitespace bounded as in its file).
const char* kJsonGbnf = R"g(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: made greedy to keep llama from generating too much of it
ws ::= | " " | "\n" [ \t]{0,20}
)g";

TEST(Gbnf, JsonGrammarAgreesWithJsonMatcher) {
    const auto g = parse(kJsonGbnf);
    const auto nodes = std::make_shared<const JsonGrammarNodes>(JsonGrammarNodes::any_object());
    const std::vector<std::string> samples = {
        "{}", "{\"a\":1}", "{\"a\": [1, 2.5, -3e4, true, null], \"b\": {\"c\": \"d\\n\\u00e9\"}}",
        "{\"name\": \"Tom\", \"age\": 3}", "{\"x\": \"caf\xC3\xA9\"}", "{\"a\":", "{\"a\" 1}", "[1]",
        "{\"a\":01}", "{\"a\":\"\\x\"}", "{\"a\":\"tab\there\"}", "{,}", "{\"a\":1,}", "{\"k\": [[], {}]}",
        "{\"a\":tru}", "{\"a\":true}",
    };
    for (const std::string& s : samples) {
        JsonMatcher jm(nodes);
        const bool json_ok = jm.feed(s);
        GbnfMatcher gm(g);
        const bool gbnf_ok = gm.feed(s);
        EXPECT_EQ(gbnf_ok, json_ok) << s;
        if (json_ok && gbnf_ok) {
            EXPECT_EQ(gm.complete(), jm.complete()) << s;
        }
    }
    EXPECT_TRUE(whole(g, "{\"a\": [1, {\"b\": null}]}"));
}

// Random walks, a byte at a time among those accepted: the matcher never accepts a text it
// cannot complete, so until it is closed some byte always continues it.
TEST(Gbnf, NoDeadEnds) {
    std::mt19937 rng(5);
    for (const char* text : {kJsonGbnf, "root ::= item{2,4}\nitem ::= \"- \" [a-zé€]{1,3} (\" \" [0-9]+)? \"\\n\"\n",
                             "root ::= p \".\"\np ::= \"(\" p* \")\" | [α-γ]"}) {
        const auto g = parse(text);
        for (int walk = 0; walk < 30; ++walk) {
            GbnfMatcher m(g);
            std::string fed;
            for (int step = 0; step < 120 && !m.closed(); ++step) {
                if (m.complete() && rng() % 8 == 0) break;
                std::vector<std::string> next;
                for (int b = 0; b < 256; ++b)
                    if (m.accepts(std::string(1, char(b)))) next.push_back(std::string(1, char(b)));
                ASSERT_FALSE(next.empty()) << "dead end after '" << fed << "'";
                const std::string& b = next[rng() % next.size()];
                ASSERT_TRUE(m.feed(b));
                fed += b;
            }
        }
    }
}

}  // namespace
