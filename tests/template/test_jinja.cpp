// Unit tests of the Jinja interpreter: whitespace control, expressions, Python string methods,
// filters, tests, statements, and errors with line and column. The expected texts are what
// Python jinja2 3.1 (Debian's python3-jinja2, set up as scripts/make-golden-templates.py sets it
// up: trim_blocks, lstrip_blocks, HF's tojson) renders for the same sources.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "vkllm/chat_template.h"

namespace {

struct Case {
    const char* source;
    const char* expected;
};

// Renders with no messages, bos_token "<s>", eos_token "</s>" and the fixed date 2026-01-15.
std::string render(const std::string& source) {
    vkllm::ChatTemplateInputs in;
    in.bos_token = "<s>";
    in.eos_token = "</s>";
    in.now = "2026-01-15";
    return vkllm::render_chat_template(source, in);
}

void check(const std::vector<Case>& cases) {
    for (const auto& c : cases) {
        try {
            EXPECT_EQ(render(c.source), c.expected) << "template: " << c.source;
        } catch (const std::exception& e) {
            ADD_FAILURE() << "template: " << c.source << "\nthrew: " << e.what();
        }
    }
}

TEST(Jinja, WhitespaceControl) {
    check({
    {R"j({% if true %}
yes
{% endif %}
after
)j",
     R"j(yes
after)j"},
    {R"j(  {% if true %}
  x
  {% endif %}
end)j",
     R"j(  x
end)j"},
    {R"j(a  {%- if true -%}  b  {%- endif -%}  c)j",
     R"j(abc)j"},
    {R"j(a
  {%+ if true %}b{% endif %})j",
     R"j(a
  b)j"},
    {R"j({{ 'x' }}
{{ 'y' }}
)j",
     R"j(x
y)j"},
    {R"j(A  {{- 'x' -}}  
 y)j",
     R"j(Axy)j"},
    {R"j({# c #}
A
  {# c2 #}
B)j",
     R"j(A
B)j"},
    {R"j({%- set x = 1 %}

{{ x }})j",
     R"j(
1)j"},
    {R"j(a
    {%- if true %}
    b
    {%- endif %}
c)j",
     R"j(a    bc)j"},
    {R"j(x {% if true %} y {% endif %} z)j",
     R"j(x  y  z)j"},
    {R"j({{ 1 }}
  {% if true %}a{% endif %})j",
     R"j(1
a)j"},
    {R"j({{ 1 }}  {% if true %}a{% endif %})j",
     R"j(1  a)j"},
    {R"j({% if true %}  
{% endif %}|)j",
     R"j(  
|)j"},
    {R"j({% if true +%}
kept{% endif %})j",
     R"j(
kept)j"},
    {R"j(	{% for i in [1, 2] %}
	{{ i }}
	{% endfor %}
)j",
     R"j(	1
	2
)j"},
    {R"j({% raw %}
  {{ not evaluated }} {% if %}
{% endraw %}
x)j",
     R"j(
  {{ not evaluated }} {% if %}
x)j"},
    {R"j(  {%- raw -%}  a  {%- endraw -%}  b)j",
     R"j(ab)j"},
    {R"j({#- comment -#}   text)j",
     R"j(text)j"},
    {R"j(line
next
)j",
     R"j(line
next)j"},
    {R"j(ends with two newlines

)j",
     R"j(ends with two newlines
)j"},
    });
}

TEST(Jinja, Expressions) {
    check({
    {R"j({{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }})j",
     R"j(7 9 64 4)j"},
    {R"j({{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 6 / 3 }} {{ 2 ** 10 }})j",
     R"j(3 -4 -2 2 3.5 2.0 1024)j"},
    {R"j({{ 1 / 3 }} {{ 1e20 }} {{ 1e16 }} {{ 1e15 }} {{ 0.1 + 0.2 }} {{ 3.0 }} {{ 1.5e-7 }} {{ 0.0001 }} {{ 1_000 }})j",
     R"j(0.3333333333333333 1e+20 1e+16 1000000000000000.0 0.30000000000000004 3.0 1.5e-07 0.0001 1000)j"},
    {R"j({{ 'ab' ~ 1 ~ none ~ true ~ 2.0 ~ undefined_name }})j",
     R"j(ab1NoneTrue2.0)j"},
    {R"j({{ [1, 'a', none, true, 1.5, "it's"] }} {{ {'a': 1, 2: [3], 'q': {'x': 'y'}} }} {{ (1, 2) }})j",
     R"j([1, 'a', None, True, 1.5, "it's"] {'a': 1, 2: [3], 'q': {'x': 'y'}} (1, 2))j"},
    {R"j({{ 'hello'[1:3] }} {{ 'hello'[::-1] }} {{ [1,2,3,4][-2:] }} {{ 'héllo'[1] }} {{ [1,2,3,4,5][::2] }} {{ [1,2,3][5:] }} {{ 'abcdef'[-1:1:-2] }})j",
     R"j(el olleh [3, 4] é [1, 3, 5] [] fd)j"},
    {R"j({{ 'a' in 'cat' }} {{ 2 in [1,2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }} {{ 'x' in undefined_name }})j",
     R"j(True True True True False)j"},
    {R"j({{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ none == none }})j",
     R"j(True False True True True True True)j"},
    {R"j({{ none }}|{{ undefined_name }}|{{ x.y if x is defined else 'no' }}|{{ 'a' if false }}|{{ {'a': none}.b }})j",
     R"j(None||no||)j"},
    {R"j({{ 1 and 'x' }} {{ 0 or 'y' }} {{ not [] }} {{ [] or {} }} {{ 'a' and '' }})j",
     R"j(x y True {} )j"},
    {R"j({{ 'a' 'b' }} {{ "x\ty\n" }} {{ '\u00e9\x41' }} {{ 'back\\slash' }} {{ 'keep \d' }})j",
     R"j(ab x	y
 éA back\slash keep \d)j"},
    {R"j({{ -3 | abs }} {{ +2 }} {{ 'ab' * 2 }} {{ [0] * 3 }} {{ [1] + [2] }} {{ '%s-%d' % ('a', 3) }})j",
     R"j(3 2 abab [0, 0, 0] [1, 2] a-3)j"},
    {R"j({{ {'a': {'b': [10, 20]}}.a.b.1 }} {{ {'a': 1}['a'] }} {{ [1, 2][-1] }} {{ 'abc'.0 }})j",
     R"j(20 1 2 a)j"},
    });
}

TEST(Jinja, StringMethods) {
    check({
    {R"j({{ '  a b  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '  a'.lstrip() }}|{{ 'a  '.rstrip() }}|{{ 'abcba'.rstrip('ab') }})j",
     R"j(a b|a|a|a|abc)j"},
    {R"j({{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ 'a-b-c'.rsplit('-', 1) }}|{{ 'x\ny\r\nz'.splitlines() }})j",
     R"j(['a', 'b', '', 'c']|['a', 'b']|['a', 'b c']|['a-b', 'c']|['x', 'y', 'z'])j"},
    {R"j({{ 'abc'.startswith(('x','a')) }}|{{ 'abc'.endswith('bc') }}|{{ 'Hello World'.lower() }}|{{ 'hello wORLD'.title() }}|{{ 'abc'.upper() }}|{{ 'aBC'.capitalize() }})j",
     R"j(True|True|hello world|Hello World|ABC|Abc)j"},
    {R"j({{ '{} and {name}'.format(1, name='n') }}|{{ '{1}{0}'.format('a', 'b') }}|{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'abcabc'.find('c') }}|{{ 'abc'.find('z') }}|{{ 'a-b'.count('-') }}|{{ ', '.join(['x', 'y']) }})j",
     R"j(1 and n|ba|bba|2|-1|1|x, y)j"},
    {R"j({{ '12'.isdigit() }}|{{ 'ab'.isalpha() }}|{{ ' '.isspace() }}|{{ {'a': 1}.get('a') }}|{{ {'a': 1}.get('b', 'd') }}|{{ {'a': 1}.get('b') }}|{{ {'a': 1, 'b': 2}.keys() | list }}|{{ {'a': 1}.values() | list }}|{{ [1, 2, 1].count(1) }}|{{ [5, 6].index(6) }})j",
     R"j(True|True|True|1|d|None|['a', 'b']|[1]|2|1)j"},
    });
}

TEST(Jinja, Filters) {
    check({
    {R"j({{ '  x  ' | trim }}|{{ 'xx-xx' | trim('x') }}|{{ [3,1,2] | sort | list }}|{{ [3,1,2] | sort(reverse=true) }}|{{ ['b', 'A', 'a'] | sort }}|{{ [1,2,3] | join(', ') }}|{{ 'abc' | length }}|{{ {'a': 1} | length }}|{{ undefined_name | length }})j",
     R"j(x|-|[1, 2, 3]|[3, 2, 1]|['A', 'a', 'b']|1, 2, 3|3|1|0)j"},
    {R"j({{ undefined_name | default('d') }}|{{ '' | default('e', true) }}|{{ none | default('n') }}|{{ false | d('f', boolean=true) }}|{{ [1,2] | first }}|{{ [1,2] | last }}|{{ 'abc' | first }})j",
     R"j(d|e|None|f|1|2|a)j"},
    {R"j({{ {'b': 1, 'a': 2, 'C': 0} | dictsort }}|{{ {'b': 1, 'a': 2} | dictsort(by='value', reverse=true) }}|{{ {'a': 1} | items | list }}|{{ undefined_name | items | list }})j",
     R"j([('a', 2), ('b', 1), ('C', 0)]|[('a', 2), ('b', 1)]|[('a', 1)]|[])j"},
    {R"j({{ [{'n': 'x'}, {'n': 'y'}, {}] | map(attribute='n') | join(',') }}|{{ [{'n': 'x'}, {}] | map(attribute='n', default='z') | list }}|{{ ['a','b'] | map('upper') | list }}|{{ none | map('upper') | list }})j",
     R"j(x,y,|['x', 'z']|['A', 'B']|[])j"},
    {R"j({{ [1, none, 2, 0] | select | list }}|{{ [1, 2, 3, 4] | select('odd') | list }}|{{ [1, 2, 3] | reject('equalto', 2) | list }}|{{ [{'a': 1}, {'a': 2}, {'b': 3}] | selectattr('a', 'equalto', 2) | list }}|{{ [{'a': 1}, {'b': 3}] | selectattr('a') | list }}|{{ [{'a': 1}, {'b': 3}] | rejectattr('a', 'defined') | list }}|{{ none | selectattr('a') | list }})j",
     R"j([1, 2]|[1, 3]|[1, 3]|[{'a': 2}]|[{'a': 1}]|[{'b': 3}]|[])j"},
    {R"j({{ [1,1,2,'A','a'] | unique | list }}|{{ 'a\nb\n\nc' | indent(2) }}|{{ 'a\nb' | indent(2, true) }}|{{ 'a\n\nb' | indent('> ', blank=true) }})j",
     R"j([1, 2, 'A']|a
  b

  c|  a
  b|a
> 
> b)j"},
    {R"j({{ '12' | int + 1 }}|{{ 'x' | int }}|{{ 'x' | int(7) }}|{{ 3.9 | int }}|{{ ' 0x1A ' | int(0, 16) }}|{{ '2.5' | float }}|{{ 3 | float }}|{{ 'y' | float }}|{{ 2.5 | round }}|{{ 3.14159 | round(2) }}|{{ 2.7 | round(method='floor') }})j",
     R"j(13|0|7|3|26|2.5|3.0|0.0|2.0|3.14|2.0)j"},
    {R"j({{ [1,2] | reverse | list }}|{{ 'abc' | reverse }}|{{ 'abc' | upper }}|{{ 'ABC' | lower }}|{{ [1,2,3] | sum }}|{{ [{'v': 2}, {'v': 3}] | sum(attribute='v') }}|{{ [3,1] | min }}|{{ ['b', 'C', 'a'] | max }}|{{ 'hello world' | capitalize }}|{{ 'hello wORLD-x' | title }}|{{ 'ab' | list }}|{{ {'k': 1} | list }})j",
     R"j([2, 1]|cba|ABC|abc|6|5|1|C|Hello world|Hello World-X|['a', 'b']|['k'])j"},
    {R"j({{ 'a<b>&"' | escape }}|{{ '<b>' | safe + '<i>' }}|{{ '<i>' + '<b>' | safe }}|{{ ('<b>' | safe) ~ '<i>' }}|{{ 'x' | string }}|{{ 1 | string + 'a' }}|{{ [1] | string }}|{{ 'one two  three' | wordcount }}|{{ 'a.b' | replace('.', '::') }}|{{ 'aaa' | replace('a', 'b', 2) }})j",
     R"j(a&lt;b&gt;&amp;&#34;|<b>&lt;i&gt;|&lt;i&gt;<b>|<b><i>|x|1a|[1]|3|a::b|bba)j"},
    {R"j({{ {'a': [1, 2.5, none, true], 'é': 'x"y\n\t\u0001'} | tojson }}|{{ {'a': 1, 'b': [1, {'c': []}], 'd': {}} | tojson(indent=2) }}|{{ [1,2] | tojson(separators=(',', ':')) }}|{{ {'b':1,'a':2} | tojson(sort_keys=true) }}|{{ 'é' | tojson(ensure_ascii=true) }}|{{ 'x' | tojson }}|{{ {1: 2} | tojson }}|{{ 1.0 | tojson }})j",
     R"j({"a": [1, 2.5, null, true], "é": "x\"y\n\t\u0001"}|{
  "a": 1,
  "b": [
    1,
    {
      "c": []
    }
  ],
  "d": {}
}|[1,2]|{"a": 2, "b": 1}|"\u00e9"|"x"|{"1": 2}|1.0)j"},
    });
}

TEST(Jinja, Tests) {
    check({
    {R"j({{ x is defined }}{{ x is undefined }}{{ none is none }}{{ 'a' is string }}{{ 1 is number }}{{ true is number }}{{ true is boolean }}{{ 1 is boolean }}{{ {} is mapping }}{{ [] is mapping }})j",
     R"j(FalseTrueTrueTrueTrueTrueTrueFalseTrueFalse)j"},
    {R"j({{ [] is iterable }}{{ 'a' is iterable }}{{ 1 is iterable }}{{ 'a' is sequence }}{{ {} is sequence }}{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 1 is integer }}{{ 1.0 is float }}{{ true is integer }})j",
     R"j(TrueTrueFalseTrueTrueTrueTrueTrueTrueTrueFalse)j"},
    {R"j({{ 1 is eq 1 }}{{ 1 is equalto 2 }}{{ 1 is ne 2 }}{{ 1 is lt 2 }}{{ 3 is ge 3 }}{{ true is true }}{{ 1 is true }}{{ false is false }}{{ 'A' is upper }}{{ 'a' is lower }}{{ 'a' is in 'abc' }}{{ x is not defined }}{{ none is not none }}{{ 'upper' is filter }}{{ 'odd' is test }})j",
     R"j(TrueFalseTrueTrueTrueTrueFalseTrueTrueTrueTrueTrueFalseTrueTrue)j"},
    });
}

TEST(Jinja, Statements) {
    check({
    {R"j({% for x in ['a','b','c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem | default('-') }}{{ loop.nextitem | default('-') }}{{ loop.cycle('o','e') }};{% endfor %})j",
     R"j(1032TrueFalse3-bo;2121FalseFalse3ace;3210FalseTrue3b-o;)j"},
    {R"j({% for x in [1,2,3,4] if x is even %}{{ x }}{{ loop.length }}{{ loop.last }}{% else %}none{% endfor %}|{% for x in [] %}x{% else %}empty{% endfor %}|{% for x in undefined_name %}u{% endfor %})j",
     R"j(22False42True|empty|)j"},
    {R"j({% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }},{% endfor %}{% for k in {'z': 1, 'y': 2} %}{{ k }}{% endfor %}{% for c in 'ab' %}[{{ c }}]{% endfor %})j",
     R"j(a=1,b=2,zy[a][b])j"},
    {R"j({% for x in range(6) %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}|{{ range(2, 9, 3) | list }}|{{ range(3, 0, -1) | list }})j",
     R"j(023|[2, 5, 8]|[3, 2, 1])j"},
    {R"j({% for i in [1, 2] %}{% for j in 'ab' %}{{ i }}{{ j }}{{ loop.index }}{% endfor %}{{ loop.index }} {% endfor %})j",
     R"j(1a11b21 2a12b22 )j"},
    {R"j({% set x = 1 %}{% for i in [1,2] %}{{ x }}{% set x = 5 %}{{ x }}{% endfor %}{{ x }}{% if true %}{% set x = 7 %}{% endif %}{{ x }})j",
     R"j(151517)j"},
    {R"j({% set ns = namespace(n=0, s='') %}{% for i in [1,2,3] %}{% set ns.n = ns.n + i %}{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.n }} {{ ns.s }})j",
     R"j(6 123)j"},
    {R"j({% set a, b = [1, 2] %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }})j",
     R"j(12(1, 2))j"},
    {R"j({% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', punct='?') }} {{ greet() }}|{{ greet('C') | upper }})j",
     R"j(Hi A! Hi B? Hi !|HI C!)j"},
    {R"j({% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('p') %}inner {{ 1 + 1 }}{% endcall %})j",
     R"j(<p>inner 2</p>)j"},
    {R"j({% set s %}  a {{ 1 }} {% endset %}[{{ s }}]{% set t | trim | upper %}  b  {% endset %}[{{ t }}])j",
     R"j([  a 1 ][B])j"},
    {R"j({% filter upper %}abc {{ 'd' }}{% endfilter %}|{% generation %}gen {{ 1 }}{% endgeneration %})j",
     R"j(ABC D|gen 1)j"},
    {R"j({% if false %}{{ 1 | nosuch }}{% endif %}{{ 1 if true else 2 | nosuch }})j",
     R"j(1)j"},
    {R"j({% if false %}a{% elif none %}b{% elif 'x' %}c{% else %}d{% endif %}{% if 0 %}e{% else %}f{% endif %})j",
     R"j(cf)j"},
    {R"j({{ strftime_now('%d %B %Y %A %H:%M %b %j') }})j",
     R"j(15 January 2026 Thursday 00:00 Jan 015)j"},
    {R"j({{ bos_token }}{{ messages | length }}{{ add_generation_prompt }})j",
     R"j(<s>0False)j"},
    });
}

}  // namespace

namespace {

// The error a source gives: its message and position.
vkllm::TemplateError error_of(const std::string& source) {
    try {
        render(source);
    } catch (const vkllm::TemplateError& e) {
        return e;
    }
    ADD_FAILURE() << "rendered without an error: " << source;
    return vkllm::TemplateError("", 0, 0);
}

TEST(Jinja, SyntaxErrorsHaveLineAndColumn) {
    struct Want {
        const char* source;
        int line, column;
        const char* message;  // a part of the message
    };
    const Want cases[] = {
        {"{{ 1 + }}", 1, 8, "unexpected '}}'"},
        {"text\n  {% if %}", 2, 9, "unexpected '%}'"},
        {"{% for x in y %}\nbody", 2, 5, "unexpected end of template, expected 'else' or 'endfor'"},
        {"a\nb {{ x", 2, 3, "missing '}}'"},
        {"{% include 'x.jinja' %}", 1, 4, "unknown statement 'include'"},
        {"{# never closed", 1, 1, "Missing end of comment tag"},
        {"{{ (1, 2] }}", 1, 9, "unexpected ']', expected ')'"},
        {"{{ 'abc }}", 1, 4, "unexpected end of string"},
        {"{% if x %}{% endfor %}", 1, 14, "unexpected 'endfor', expected 'elif' or 'else' or 'endif'"},
        {"{% endif %}", 1, 4, "unexpected 'endif'"},
        {"{{ x is defined is none }}", 1, 17, "cannot chain multiple tests"},
        {"{{ a ? b }}", 1, 6, "unexpected char '?'"},
        // A loop body inside `if` is no longer "inside if" for jinja2: unknown filters fail early.
        {"{% if true %}{% for i in [1] %}{{ 1 | nosuch }}{% endfor %}{% endif %}", 1, 37, "No filter named 'nosuch'."},
    };
    for (const auto& w : cases) {
        vkllm::TemplateError e = error_of(w.source);
        EXPECT_EQ(e.line(), w.line) << w.source << ": " << e.what();
        EXPECT_EQ(e.column(), w.column) << w.source << ": " << e.what();
        EXPECT_NE(e.message().find(w.message), std::string::npos) << w.source << ": " << e.what();
        EXPECT_FALSE(e.raised());
        EXPECT_EQ(std::string(e.what()).rfind("line " + std::to_string(w.line) + ", column ", 0), 0u) << e.what();
    }
}

TEST(Jinja, RuntimeErrorsHaveLineAndColumn) {
    struct Want {
        const char* source;
        int line, column;
        const char* message;  // jinja2's message for the same template
    };
    // Positions point at the operator, call, attribute or statement keyword that failed.
    const Want cases[] = {
        {"ok\n{{ 'a' + 1 }}", 2, 8, "can only concatenate str (not \"int\") to str"},
        {"{{ none.x.y }}", 1, 10, "'None' has no attribute 'x'"},
        {"{{ x | nosuch }}", 1, 6, "No filter named 'nosuch'."},
        {"{{ 1 is nosuch }}", 1, 9, "No test named 'nosuch'."},
        // Inside `if`, jinja2 lets an unknown filter fail only when it runs (a template may test
        // for it first), and says so differently.
        {"{% if true %}{{ 1 | nosuch }}{% endif %}", 1, 19, "No filter named 'nosuch' found."},
        {"{{ 1 if 2 is nosuch else 3 }}", 1, 11, "No test named 'nosuch' found."},
        {"{% for m in none %}{% endfor %}", 1, 4, "'NoneType' object is not iterable"},
        {"{{ 1 in none }}", 1, 4, "argument of type 'NoneType' is not iterable"},
        {"{{ [1] | map('upper') | tojson }}", 1, 23, "Object of type generator is not JSON serializable"},
        {"{% set l = [] %}{{ l.append(1) }}", 1, 28, "access to attribute 'append' of 'list' object is unsafe."},
        {"{{ 1 // 0 }}", 1, 6, "integer division or modulo by zero"},
        {"{{ none | length }}", 1, 9, "object of type 'NoneType' has no len()"},
        {"{{ undefined_name() }}", 1, 18, "'undefined_name' is undefined"},
        {"{% set x = 1 %}{% set x.y = 2 %}", 1, 19, "cannot assign attribute on non-namespace object"},
    };
    for (const auto& w : cases) {
        vkllm::TemplateError e = error_of(w.source);
        EXPECT_EQ(e.line(), w.line) << w.source << ": " << e.what();
        EXPECT_EQ(e.column(), w.column) << w.source << ": " << e.what();
        EXPECT_EQ(e.message(), w.message) << w.source;
    }
}

TEST(Jinja, RaiseExceptionGivesTheTemplatesMessage) {
    vkllm::TemplateError e = error_of("{% if messages | length == 0 %}\n  {{ raise_exception('No messages: ' ~ 0) }}\n{% endif %}");
    EXPECT_TRUE(e.raised());
    EXPECT_STREQ(e.what(), "No messages: 0");
    EXPECT_EQ(e.line(), 0);
}

// Upper and lower case, str.title(), capitalize and the title filter over ASCII, Latin-1, Latin
// Extended-A, Greek and Cyrillic letters, against Python's results.
TEST(Jinja, CaseMappingMatchesPython) {
    std::u32string letters;
    for (char32_t c = 'A'; c <= 'Z'; ++c) letters += c;
    for (char32_t c = 'a'; c <= 'z'; ++c) letters += c;
    letters += char32_t(0xb5);
    for (char32_t c = 0xc0; c < 0x180; ++c) letters += c;
    for (char32_t c = 0x386; c < 0x3cf; ++c)
        if (c != 0x387 && c != 0x38b && c != 0x38d && c != 0x3a2) letters += c;
    for (char32_t c = 0x400; c < 0x460; ++c) letters += c;
    std::string json = "{\"s\": \"";  // the letters as JSON \\u escapes
    for (char32_t c : letters) {
        char escape[8];
        std::snprintf(escape, sizeof escape, "\\u%04x", unsigned(c));
        json += escape;
    }
    vkllm::ChatTemplateInputs in;
    in.extra_json = json + "\"}";
    const char* src = R"j({{ s | upper }}
{{ s | lower }}
{{ s.title() }}
{{ s | capitalize }}
{{ ('x ' ~ s[100:140] ~ ' y-' ~ s[200:230]) | title }})j";
    EXPECT_EQ(vkllm::render_chat_template(src, in), R"j(ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMNOPQRSTUVWXYZΜÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖ×ØÙÚÛÜÝÞSSÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖ÷ØÙÚÛÜÝÞŸĀĀĂĂĄĄĆĆĈĈĊĊČČĎĎĐĐĒĒĔĔĖĖĘĘĚĚĜĜĞĞĠĠĢĢĤĤĦĦĨĨĪĪĬĬĮĮİIĲĲĴĴĶĶĸĹĹĻĻĽĽĿĿŁŁŃŃŅŅŇŇʼNŊŊŌŌŎŎŐŐŒŒŔŔŖŖŘŘŚŚŜŜŞŞŠŠŢŢŤŤŦŦŨŨŪŪŬŬŮŮŰŰŲŲŴŴŶŶŸŹŹŻŻŽŽSΆΈΉΊΌΎΏΪ́ΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡΣΤΥΦΧΨΩΪΫΆΈΉΊΫ́ΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡΣΣΤΥΦΧΨΩΪΫΌΎΏЀЁЂЃЄЅІЇЈЉЊЋЌЍЎЏАБВГДЕЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯАБВГДЕЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯЀЁЂЃЄЅІЇЈЉЊЋЌЍЎЏ
abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzµàáâãäåæçèéêëìíîïðñòóôõö×øùúûüýþßàáâãäåæçèéêëìíîïðñòóôõö÷øùúûüýþÿāāăăąąććĉĉċċččďďđđēēĕĕėėęęěěĝĝğğġġģģĥĥħħĩĩīīĭĭįįi̇ıĳĳĵĵķķĸĺĺļļľľŀŀłłńńņņňňŉŋŋōōŏŏőőœœŕŕŗŗřřśśŝŝşşššţţťťŧŧũũūūŭŭůůűűųųŵŵŷŷÿźźżżžžſάέήίόύώΐαβγδεζηθικλμνξοπρστυφχψωϊϋάέήίΰαβγδεζηθικλμνξοπρςστυφχψωϊϋόύώѐёђѓєѕіїјљњћќѝўџабвгдежзийклмнопрстуфхцчшщъыьэюяабвгдежзийклмнопрстуфхцчшщъыьэюяѐёђѓєѕіїјљњћќѝўџ
Abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzµàáâãäåæçèéêëìíîïðñòóôõö×Øùúûüýþßàáâãäåæçèéêëìíîïðñòóôõö÷Øùúûüýþÿāāăăąąććĉĉċċččďďđđēēĕĕėėęęěěĝĝğğġġģģĥĥħħĩĩīīĭĭįįi̇ıĳĳĵĵķķĸĺĺļļľľŀŀłłńńņņňňŉŋŋōōŏŏőőœœŕŕŗŗřřśśŝŝşşššţţťťŧŧũũūūŭŭůůűűųųŵŵŷŷÿźźżżžžſάέήίόύώΐαβγδεζηθικλμνξοπρστυφχψωϊϋάέήίΰαβγδεζηθικλμνξοπρςστυφχψωϊϋόύώѐёђѓєѕіїјљњћќѝўџабвгдежзийклмнопрстуфхцчшщъыьэюяабвгдежзийклмнопрстуфхцчшщъыьэюяѐёђѓєѕіїјљњћќѝўџ
Abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzµàáâãäåæçèéêëìíîïðñòóôõö×øùúûüýþßàáâãäåæçèéêëìíîïðñòóôõö÷øùúûüýþÿāāăăąąććĉĉċċččďďđđēēĕĕėėęęěěĝĝğğġġģģĥĥħħĩĩīīĭĭįįi̇ıĳĳĵĵķķĸĺĺļļľľŀŀłłńńņņňňŉŋŋōōŏŏőőœœŕŕŗŗřřśśŝŝşşššţţťťŧŧũũūūŭŭůůűűųųŵŵŷŷÿźźżżžžſάέήίόύώΐαβγδεζηθικλμνξοπρστυφχψωϊϋάέήίΰαβγδεζηθικλμνξοπρςστυφχψωϊϋόύώѐёђѓєѕіїјљњћќѝўџабвгдежзийклмнопрстуфхцчшщъыьэюяабвгдежзийклмнопрстуфхцчшщъыьэюяѐёђѓєѕіїјљњћќѝўџ
X Ïðñòóôõö÷øùúûüýþÿāāăăąąććĉĉċċččďďđđēēĕĕė Y-Œŕŕŗŗřřśśŝŝşşššţţťťŧŧũũūūŭŭůůű)j");
}

TEST(Jinja, InputsReachTheTemplate) {
    vkllm::ChatTemplateInputs in;
    in.messages_json = R"([{"role": "user", "content": "hé", "n": 1.5}])";
    in.tools_json = R"([{"name": "t"}])";
    in.extra_json = R"({"enable_thinking": false, "z": null})";
    in.add_generation_prompt = true;
    in.bos_token = "<B>";
    in.now = "2030-12-31 23:59:00";
    const char* src =
        "{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m['content'] }}:{{ m.n }}{% endfor %}"
        "|{{ tools | tojson }}|{{ enable_thinking }}|{{ z }}|{{ add_generation_prompt }}|{{ eos_token }}|"
        "{{ documents }}|{{ strftime_now('%Y-%m-%d %H:%M %a') }}";
    EXPECT_EQ(vkllm::render_chat_template(src, in),
              "<B>user:hé:1.5|[{\"name\": \"t\"}]|False|None|True||None|2030-12-31 23:59 Tue");
    in.tools_json.clear();
    EXPECT_EQ(vkllm::render_chat_template("{{ tools is none }}{{ tools is defined }}", in), "TrueTrue");
}

TEST(Jinja, NowComesFromTheEnvironmentWhenNotGiven) {
    setenv("VKLLM_TEMPLATE_NOW", "2026-01-15", 1);
    EXPECT_EQ(vkllm::render_chat_template("{{ strftime_now('%d %b %Y') }}", vkllm::ChatTemplateInputs{}), "15 Jan 2026");
    unsetenv("VKLLM_TEMPLATE_NOW");
    vkllm::ChatTemplateInputs bad;
    bad.now = "15/01/2026";
    EXPECT_THROW(vkllm::render_chat_template("x", bad), std::invalid_argument);
}

TEST(Jinja, BadJsonInputsAreRejected) {
    vkllm::ChatTemplateInputs in;
    in.messages_json = "[{";
    EXPECT_THROW(vkllm::render_chat_template("x", in), std::invalid_argument);
    in.messages_json = R"({"role": "user"})";
    EXPECT_THROW(vkllm::render_chat_template("x", in), std::invalid_argument);
    in.messages_json = "[]";
    in.extra_json = "[1]";
    EXPECT_THROW(vkllm::render_chat_template("x", in), std::invalid_argument);
}

TEST(Jinja, PlainMessagesConvenience) {
    std::vector<vkllm::ChatMessage> chat = {{"system", "Be brief."}, {"user", "Hi \"you\"\n"}};
    const char* src =
        "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content | trim }}{{ eos_token }}{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}";
    EXPECT_EQ(vkllm::render_chat_template(src, chat, true, "<s>", "</s>"),
              "<s><|system|>Be brief.</s><|user|>Hi \"you\"</s><|assistant|>");
    EXPECT_EQ(vkllm::render_chat_template(src, chat, false), "<|system|>Be brief.<|user|>Hi \"you\"");
}

}  // namespace
