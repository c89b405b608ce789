// The render limits (engine/template/limits.h): a template from a model file cannot make the
// renderer crash, hang or take all memory; each limit gives a TemplateError that names it.
#include <gtest/gtest.h>

#include <time.h>

#include <string>

#include "template/limits.h"
#include "vkllm/chat_template.h"

namespace {

// Renders `source` and returns the error message ("" when it rendered). Only a TemplateError
// is expected: anything else (std::bad_alloc, std::length_error, ...) fails the test.
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

std::string render(const std::string& source) {
    vkllm::ChatTemplateInputs in;
    in.now = "2024-01-01";
    return vkllm::render_chat_template(source, in);
}

void expect_error(const std::string& source, const std::string& needle) {
    const std::string message = error_of(source);
    EXPECT_NE(message.find(needle), std::string::npos) << "template: " << source.substr(0, 200)
                                                        << "\nmessage: " << message;
}

// The CPU time this thread has used: the time limits of the tests hold on a loaded machine too.
double thread_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
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

// Every operation that builds a string or list knows the size it will build before it
// allocates: past the limit, a TemplateError names it (not std::bad_alloc after gigabytes).
TEST(TemplateLimits, SizesAreCheckedBeforeTheValueIsBuilt) {
    expect_error("{{ range(1000000)|join('x' * 60000000) }}", "string too long");
    expect_error("{{ range(2000)|join('x' * 40000) }}", "string too long");
    expect_error("{{ ('x' * 40000).join(range(2000)|map('string')) }}", "string too long");
    expect_error("{{ ('{0}' * 1000).format('x' * 100000) }}", "string too long");
    expect_error("{{ ('%s' * 1000) % (['x' * 100000] * 1000) }}", "string too long");
    expect_error("{{ [[[1]]]|tojson(indent=10**9) }}", "string too long");
    expect_error("{{ [[[1]]]|tojson(indent=10**18) }}", "string too long");
    expect_error("{{ ('x' * 100000).replace('x', 'y' * 1000) }}", "string too long");
    expect_error("{{ ('x' * 100000)|replace('', 'y' * 1000) }}", "string too long");
    expect_error("{{ ('\\n' * 100000)|indent(1000, blank=true) }}", "string too long");
    expect_error("{{ 'a'|indent(10**12) }}", "string too long");
    expect_error("{% set s = 'x' * 34000000 %}{{ s ~ s }}", "string too long");
    expect_error("{% set s = 'x' * 34000000 %}{{ s + s }}", "string too long");
    expect_error("{{ ('&' * 14000000)|escape }}", "string too long");
    expect_error("{{ ('\x01' * 12000000)|tojson }}", "string too long");
    expect_error("{{ (['x' * 100000] * 700)|string }}", "string too long");
    expect_error("{% set l = range(1000000)|list %}{{ (l + l)|length }}", "list too long");
    expect_error("{% for c in 'x' * 2000000 %}{% endfor %}", "list too long");
    expect_error("{{ (' ' * 2000000).split(' ')|length }}", "list too long");
    expect_error("{{ ('a ' * 1500000).split()|length }}", "list too long");
    // A list repeated holds its strings once: no copy of their text.
    EXPECT_EQ(render("{{ (['x' * 1000000] * 1000000)|length }}"), "1000000");
    // Python's ' ' * -1 is '': a negative width indents by nothing (it was a std::length_error).
    EXPECT_EQ(render("{{ 'a\\nb'|indent(-1) }}"), "a\nb");
    EXPECT_EQ(render("{{ [1]|tojson(indent=-1) }}"), "[\n1\n]");
}

// strftime_now's text is as long as the format makes it (a fixed buffer gave '' past 512
// bytes), up to a cap that is an error.
TEST(TemplateLimits, StrftimeNowGrowsItsBuffer) {
    std::string expected;
    for (int i = 0; i < 1000; ++i) expected += "2024";
    EXPECT_EQ(render("{{ strftime_now('%Y' * 1000) }}"), expected);
    EXPECT_EQ(render("{{ strftime_now('') }}"), "");
    expect_error("{{ strftime_now('x' * 2000000) }}", "strftime_now text too long");
}

// Quadratic work within the step limit: a list or a string rebuilt in a loop (this list took
// hours), a large list copied or searched over and over, a quadratic filter, a search whose
// naive cost is the product of the lengths. Each ends within a second or so of CPU time, with
// the work limit named.
TEST(TemplateLimits, WorkIsBounded) {
    const char* hostile[] = {
        "{% set ns=namespace(x=[]) %}{% for i in range(999999) %}{% set ns.x = ns.x + [i] %}{% endfor %}",
        "{% set ns=namespace(x='') %}{% for i in range(999999) %}{% set ns.x = ns.x ~ 'abcdefghij' %}{% endfor %}",
        "{% set l = range(1000000)|list %}{% for i in range(999999) %}{{ l|first }}{% endfor %}",
        "{% set l = range(1000000)|list %}{% for i in range(999999) %}{{ -1 in l }}{% endfor %}",
        "{{ range(100000)|unique|list|length }}",
        "{% set s = 'a' * 2000000 %}{{ s.count('a' * 1000000 + 'b') }}",
    };
    for (const char* source : hostile) {
        const double t0 = thread_seconds();
        expect_error(source, "template does too much work");
        EXPECT_LT(thread_seconds() - t0, 2.0) << source;
    }
}

// Values nested without bound (a list wrapped in a list in a loop) are freed without
// recursion (it overflowed the stack), and walking them stops at the nesting limit.
TEST(TemplateLimits, DeepValuesEnd) {
    const std::string deep =
        "{% set ns = namespace(x=[], d={}) %}{% for i in range(100000) %}"
        "{% set ns.x = [ns.x] %}{% set ns.d = {'a': ns.d} %}{% endfor %}";
    expect_error(deep + "{{ ns.x == ns.x[0] }}", "value nested too deeply");
    expect_error(deep + "{{ ns.x < ns.x[0] }}", "value nested too deeply");
    expect_error(deep + "{{ ns.d }}", "value nested too deeply");
    expect_error(deep + "{{ ns.d|tojson }}", "value nested too deeply");
    // JSON inputs nested past the limit are refused as inputs.
    vkllm::ChatTemplateInputs in;
    in.messages_json = "[" + repeated("[", 1000) + repeated("]", 1000) + "]";
    EXPECT_THROW(vkllm::render_chat_template("{{ messages|length }}", in), std::invalid_argument);
}
// Conversions as Python's, or an error: never undefined behaviour (a float beyond int64 cast
// to one) or a silently clamped value.
TEST(TemplateLimits, NumberConversions) {
    expect_error("{{ (1e300)|int }}", "does not fit a 64-bit integer");
    expect_error("{{ 9.3e18|int }}", "does not fit a 64-bit integer");
    expect_error("{{ '1e300'|int }}", "does not fit a 64-bit integer");
    expect_error("{{ '123456789012345678901234567890'|int }}", "does not fit a 64-bit integer");
    expect_error("{{ 123456789012345678901234567890 }}", "does not fit a 64-bit integer");
    expect_error("{{ x.123456789012345678901234567890 }}", "does not fit a 64-bit integer");
    // jinja2's int filter: int(float('inf')) raises OverflowError, which it lets through;
    // int(float('nan')) raises ValueError, which gives the default.
    expect_error("{{ 'inf'|float|int }}", "cannot convert float infinity to integer");
    expect_error("{{ 'inf'|int }}", "cannot convert float infinity to integer");
    expect_error("{{ (1e400)|int }}", "cannot convert float infinity to integer");
    EXPECT_EQ(render("{{ 'nan'|float|int }} {{ 'nan'|int }} {{ 'nan'|float|int(7) }}"), "0 0 7");
    EXPECT_EQ(render("{{ 2.9|int }} {{ -2.9|int }} {{ 9.2e18|int }} {{ '-9223372036854775808'|int }}"),
              "2 -2 9200000000000000000 -9223372036854775808");
    EXPECT_EQ(render("{{ '%d' % 3.7 }} {{ '%d' % -3.7 }} {{ '%d' % 5 }}"), "3 -3 5");
    expect_error("{{ '%d' % 1e300 }}", "does not fit a 64-bit integer");
    expect_error("{{ '%d' % ('nan'|float) }}", "cannot convert float NaN to integer");
    expect_error("{{ '%d' % 'x' }}", "a real number is required");
    expect_error("{{ (-9223372036854775807 - 1)|abs }}", "integer overflow");
    // Indices too long for a number are errors of the template, not C++ exceptions.
    expect_error("{{ '{99999999999999999999}'.format(1) }}", "out of range");
    expect_error("{{ [[1]]|map(attribute='99999999999999999999')|list }}", "does not fit a 64-bit integer");
    // JSON inputs: an integer beyond int64 is refused (it would have wrapped around).
    vkllm::ChatTemplateInputs in;
    in.messages_json = R"([{"role": "user", "content": "hi", "n": 18446744073709551615}])";
    EXPECT_THROW(vkllm::render_chat_template("{{ messages[0].n }}", in), std::invalid_argument);
    in.messages_json = R"([{"role": "user", "content": "hi", "n": 9223372036854775807}])";
    EXPECT_EQ(vkllm::render_chat_template("{{ messages[0].n }}", in), "9223372036854775807");
}
