// The render limits (engine/template/limits.h): a template from a model file cannot make the
// renderer crash, hang or take all memory; each limit gives a TemplateError that names it.
#include <gtest/gtest.h>

#include <string>

#include "template/limits.h"
#include "vkllm/chat_template.h"

namespace {

// Renders `source` and returns the error message ("" when it rendered).
std::string error_of(const std::string& source) {
    vkllm::ChatTemplateInputs in;
    in.now = "2024-01-01";
    try {
        vkllm::render_chat_template(source, in);
    } catch (const vkllm::TemplateError& e) {
        return e.what();
    }
    return "";
}

void expect_error(const std::string& source, const std::string& needle) {
    const std::string message = error_of(source);
    EXPECT_NE(message.find(needle), std::string::npos) << "template: " << source.substr(0, 200)
                                                        << "\nmessage: " << message;
}

std::string repeated(const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
}

}  // namespace

TEST(TemplateLimits, DeepNestingIsAParseError) {
    using vkllm::jinja::limits::kMaxNesting;
    expect_error("{{ " + repeated("(", 100000) + "1" + repeated(")", 100000) + " }}", "nested too deeply");
    expect_error("{{ " + repeated("not ", 100000) + "x }}", "nested too deeply");
    expect_error("{{ " + repeated("-", 100000) + "1 }}", "nested too deeply");
    expect_error(repeated("{% if x %}", 100000), "nested too deeply");
    // Just inside the limit still renders.
    EXPECT_EQ(error_of("{{ " + repeated("(", kMaxNesting / 2) + "1" + repeated(")", kMaxNesting / 2) + " }}"), "");
}

TEST(TemplateLimits, LongChainsAreAParseError) {
    // Left-deep chains are built in loops, so their depth is counted on the tree.
    expect_error("{{ 1" + repeated(" ~ 1", 100000) + " }}", "expression too deep");
    expect_error("{{ x" + repeated(".a", 100000) + " }}", "expression too deep");
    expect_error("{{ x" + repeated("|string", 100000) + " }}", "expression too deep");
    expect_error("{{ x" + repeated("()", 100000) + " }}", "expression too deep");
    EXPECT_EQ(error_of("{{ 1" + repeated(" + 1", 100) + " }}"), "");
}

TEST(TemplateLimits, RecursionEnds) {
    expect_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "macro calls nested too deeply");
    // Recursion within the limit works.
    EXPECT_EQ(error_of("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(20) }}"), "");
}

TEST(TemplateLimits, LoopsEnd) {
    expect_error("{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(10) %}"
                 "{% endfor %}{% endfor %}{% endfor %}",
                 "template runs too long");
    expect_error("{% for i in range(10**12) %}{% endfor %}", "range too long");
    expect_error("{% for i in range(-9223372036854775807, 9223372036854775807) %}{% endfor %}", "range too long");
    EXPECT_EQ(error_of("{% for i in range(1000) %}{% endfor %}"), "");
}

TEST(TemplateLimits, SizesAreBounded) {
    expect_error("{{ 'x' * 10**12 }}", "string repetition too large");
    expect_error("{{ [1, 2] * 10**9 }}", "list repetition too large");
    // Doubling a string: stops at the string limit.
    expect_error("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                 "string too long");
    // Copying a large string over and over: stops at the work budget.
    expect_error("{% set s = 'x' * 30000000 %}{% for i in range(100) %}{% set t = s ~ '' %}{% endfor %}",
                 "template does too much work");
    // Printing a large string many times: stops at the output limit.
    expect_error("{% set s = 'x' * 1000000 %}{% for i in range(100) %}{{ s }}{% endfor %}", "output too large");
}

TEST(TemplateLimits, IntegerOverflowIsAnError) {
    expect_error("{{ 9223372036854775807 + 1 }}", "integer overflow");
    expect_error("{{ -9223372036854775807 - 2 }}", "integer overflow");
    expect_error("{{ 4294967296 * 4294967296 }}", "integer overflow");
    expect_error("{{ 2 ** 63 }}", "integer overflow");
    expect_error("{{ (-9223372036854775807 - 1) // -1 }}", "integer overflow");
    expect_error("{{ -(-9223372036854775807 - 1) }}", "integer overflow");
    vkllm::ChatTemplateInputs in;
    EXPECT_EQ(vkllm::render_chat_template("{{ 2 ** 62 }} {{ 1 ** 1000000000000 }} {{ (-1) ** 999999999999 }}", in),
              "4611686018427387904 1 -1");
}
