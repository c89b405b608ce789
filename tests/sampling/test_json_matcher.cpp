// JsonMatcher and JsonGrammarNodes: which texts continue a JSON value (any object, or what a
// schema allows), fed whole and in every two-piece split (as tokens would come), unicode
// escapes and UTF-8, numbers, nesting, schema keywords and their refusals; and the sampler's
// constrained draw.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "sampling/json_grammar.h"
#include "sampling/json_matcher.h"
#include "sampling/sampler.h"

using namespace vkllm::sampling;

namespace {

std::shared_ptr<const JsonGrammarNodes> object_grammar() {
    return std::make_shared<const JsonGrammarNodes>(JsonGrammarNodes::any_object());
}
std::shared_ptr<const JsonGrammarNodes> schema(const std::string& s) {
    return std::make_shared<const JsonGrammarNodes>(JsonGrammarNodes::from_schema(s));
}

// Whether `text` is accepted as a prefix: fed whole, and split in two at every point (the
// matcher must not depend on where token boundaries fall).
bool prefix_ok(const std::shared_ptr<const JsonGrammarNodes>& g, const std::string& text) {
    JsonMatcher whole(g);
    const bool ok = whole.feed(text);
    for (size_t cut = 1; cut < text.size(); ++cut) {
        JsonMatcher m(g);
        const bool first = m.accepts(text.substr(0, cut)) && m.feed(text.substr(0, cut));
        const bool split = first && m.accepts(text.substr(cut)) && m.feed(text.substr(cut));
        EXPECT_EQ(split, ok) << "'" << text << "' cut at " << cut;
    }
    return ok;
}

// A whole document: accepted and complete.
bool document(const std::shared_ptr<const JsonGrammarNodes>& g, const std::string& text) {
    if (!prefix_ok(g, text)) return false;
    JsonMatcher m(g);
    m.feed(text);
    return m.complete();
}

}  // namespace

TEST(JsonMatcher, AnyObjectAcceptsJsonObjects) {
    const auto g = object_grammar();
    EXPECT_TRUE(document(g, "{}"));
    EXPECT_TRUE(document(g, " {\"a\": 1}"));
    EXPECT_TRUE(document(g, "{\"a\": [1, -2.5e+3, true, false, null, \"x\"], \"b\": {\"c\": {}}, \"d\": []}"));
    EXPECT_TRUE(document(g, "{\n  \"k\" : \"v\"\n}"));
    EXPECT_TRUE(document(g, "{\n\n\t\"k\": {\n\t\t\"j\": [ 1, 2 ]\n\t}\n}"));
    JsonMatcher m(g);
    ASSERT_TRUE(m.feed("{\"a\":1}"));
    EXPECT_TRUE(m.complete());
    EXPECT_TRUE(m.closed());
    EXPECT_FALSE(m.accepts(" "));  // nothing after the value, not even whitespace
    EXPECT_FALSE(m.accepts("}"));
}

TEST(JsonMatcher, AnyObjectRejectsWhatIsNotAnObject) {
    const auto g = object_grammar();
    for (const char* bad : {"[", "1", "\"a\"", "{\"a\" 1", "{\"a\":}", "{,", "{\"a\":1,}", "{\"a\":1 \"b\"", "{'a'",
                            "{\"a\":tru}", "{\"a\":nul ", "{a", "{\"a\":[1,]", "{\"a\":[1 2]", "{\"a\":1}}"})
        EXPECT_FALSE(prefix_ok(g, bad)) << bad;
    JsonMatcher m(g);
    ASSERT_TRUE(m.feed("{\"a\":"));
    EXPECT_FALSE(m.complete());
    EXPECT_FALSE(m.closed());
    EXPECT_FALSE(m.feed("}"));
    EXPECT_TRUE(m.feed("1"));  // a failed feed left the matcher as it was
}

TEST(JsonMatcher, Numbers) {
    const auto g = schema(R"({"type": "number"})");
    for (const char* good : {"0", "-0", "12", "0.5", "-1.25", "1e10", "1E-3", "2.5e+07", "123456"})
        EXPECT_TRUE(document(g, good)) << good;
    for (const char* bad : {"+1", ".5", "00", "01", "-a", "1.e3", "1e+-3", "0x1", "1..2"})
        EXPECT_FALSE(prefix_ok(g, bad)) << bad;
    for (const char* unfinished : {"-", "1.", "1e", "1e+"}) {
        JsonMatcher m(g);
        EXPECT_TRUE(m.feed(unfinished)) << unfinished;
        EXPECT_FALSE(m.complete()) << unfinished;
    }
    // A number has at most kMaxDigits digits in a part, so it always ends.
    EXPECT_TRUE(document(g, std::string(size_t(kMaxDigits), '9')));
    EXPECT_FALSE(prefix_ok(g, std::string(size_t(kMaxDigits) + 1, '9')));
    const auto integer = schema(R"({"type": "integer"})");
    EXPECT_TRUE(document(integer, "-42"));
    EXPECT_FALSE(prefix_ok(integer, "1.5"));
    EXPECT_FALSE(prefix_ok(integer, "1e3"));
    // Inside a container the number ends at the byte after it.
    EXPECT_TRUE(document(object_grammar(), "{\"n\":-0.5e-2}"));
    EXPECT_TRUE(document(object_grammar(), "{\"n\":[0,1 ,2]}"));
}

TEST(JsonMatcher, StringsEscapesAndUtf8) {
    const auto g = schema(R"({"type": "string"})");
    EXPECT_TRUE(document(g, R"("plain")"));
    EXPECT_TRUE(document(g, R"("esc \" \\ \/ \b \f \n \r \t")"));
    EXPECT_TRUE(document(g, R"("\u00e9\u20AC")"));
    EXPECT_TRUE(document(g, R"("\uD83D\uDE00")"));  // a surrogate pair
    EXPECT_TRUE(document(g, "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\""));
    for (const std::string bad : {std::string(R"("\x")"), std::string(R"("\u12G)"), std::string(R"("\uDC00)"),
                                  std::string(R"("\uD800x)"), std::string(R"("\uD800\u0041)"),
                                  std::string("\"a\nb\""), std::string("\"\xC0\x80\""), std::string("\"\xED\xA0\x80\""),
                                  std::string("\"\xF5\x80\""), std::string("\"\xE0\x80\""), std::string("\"\x80\"")})
        EXPECT_FALSE(prefix_ok(g, bad)) << bad;
    // A lone low surrogate is refused at its second hex digit, before it could be a dead end.
    JsonMatcher m(g);
    ASSERT_TRUE(m.feed("\"\\uD"));
    EXPECT_FALSE(m.accepts("C"));
    EXPECT_TRUE(m.accepts("8"));
    // An unfinished UTF-8 character is a prefix, not a document.
    JsonMatcher u(g);
    ASSERT_TRUE(u.feed("\"\xE2\x82"));
    EXPECT_FALSE(u.accepts("\""));
    EXPECT_TRUE(u.accepts("\xAC\""));
}

TEST(JsonMatcher, MaxLengthAllowsNoCharacterItCouldNotFinish) {
    const auto g = schema(R"({"type": "string", "maxLength": 2})");
    EXPECT_TRUE(document(g, R"("\u00e9")"));
    EXPECT_TRUE(document(g, "\"\xC3\xA9\xC3\xA9\""));
    JsonMatcher m(g);
    ASSERT_TRUE(m.feed("\"ab"));
    EXPECT_FALSE(m.accepts("\\"));    // an escape would be a third character
    EXPECT_FALSE(m.accepts("\xC3"));  // so would a two-byte one
    EXPECT_TRUE(m.accepts("\""));
}

// From every text the matcher accepts, some byte can follow until the document is closed: no
// dead ends. Random walks over the bytes it allows, for grammars with every kind of node.
TEST(JsonMatcher, RandomWalksNeverReachADeadEnd) {
    const std::vector<std::shared_ptr<const JsonGrammarNodes>> grammars = {
        object_grammar(),
        schema(R"({"type": "object", "properties": {"s": {"type": "string", "minLength": 1, "maxLength": 3},
                   "n": {"type": "number"}, "i": {"type": "integer"}, "e": {"enum": ["x", 1, null, [true]]},
                   "a": {"type": "array", "items": {"anyOf": [{"type": "boolean"}, {"type": "string", "maxLength": 1}]},
                         "minItems": 1, "maxItems": 2},
                   "o": {"$ref": "#"}},
                   "required": ["s", "a"], "additionalProperties": false})"),
        schema(R"({"type": ["array", "null"], "items": {"type": "object", "additionalProperties": {"type": "integer"}}})"),
    };
    uint64_t state = 12345;
    const auto next = [&] {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return uint32_t(state >> 33);
    };
    for (const auto& g : grammars) {
        for (int walk = 0; walk < 200; ++walk) {
            JsonMatcher m(g);
            std::string text;
            for (int i = 0; i < 300 && !m.closed(); ++i) {
                std::vector<uint8_t> allowed;
                for (int b = 0; b < 256; ++b)
                    if (m.accepts(std::string(1, char(b)))) allowed.push_back(uint8_t(b));
                ASSERT_FALSE(allowed.empty()) << "dead end after '" << text << "'";
                // Prefer structure over long strings, so walks reach the deeper states.
                uint8_t b = allowed[next() % allowed.size()];
                for (uint8_t c : allowed)
                    if ((c == '"' || c == '}' || c == ']' || c == ',') && next() % 3 == 0) b = c;
                ASSERT_TRUE(m.feed(std::string(1, char(b))));
                text.push_back(char(b));
            }
        }
    }
}

TEST(JsonMatcher, NestingAndWhitespaceAreBounded) {
    const auto g = object_grammar();
    std::string deep = "{";
    for (int i = 1; i < kMaxDepth; ++i) deep += "\"a\":{";
    EXPECT_TRUE(prefix_ok(g, deep));
    EXPECT_FALSE(prefix_ok(g, deep + "\"a\":{"));
    EXPECT_FALSE(prefix_ok(g, deep + "\"a\":["));
    // Whitespace: one space, or one or two newlines and an indentation of at most kMaxWhitespace.
    EXPECT_TRUE(prefix_ok(g, "{ \"a\":"));
    EXPECT_TRUE(prefix_ok(g, "{\n\n\t" + std::string(size_t(kMaxWhitespace) - 1, ' ')));
    EXPECT_FALSE(prefix_ok(g, "{\n" + std::string(size_t(kMaxWhitespace) + 1, ' ')));
    EXPECT_FALSE(prefix_ok(g, "{  "));
    EXPECT_FALSE(prefix_ok(g, "{\n\n\n"));
    EXPECT_FALSE(prefix_ok(g, "{\n \n"));
    EXPECT_FALSE(prefix_ok(g, "{\r\n"));
    EXPECT_FALSE(prefix_ok(g, "{\t"));
}

TEST(JsonMatcher, SchemaObjects) {
    const auto g = schema(R"({
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 3}, "age": {"type": "integer"},
                       "tags": {"type": "array", "items": {"enum": ["a", "b", 7]}, "minItems": 1, "maxItems": 2}},
        "required": ["name", "age"],
        "additionalProperties": false})");
    EXPECT_TRUE(document(g, R"({"name": "Bob", "age": 30})"));
    EXPECT_TRUE(document(g, R"({"age":1,"tags":["a",7],"name":""})"));  // any order
    EXPECT_FALSE(prefix_ok(g, R"({"nick")"));                             // no such property
    EXPECT_FALSE(prefix_ok(g, R"({"name": "Bobby")"));                    // longer than maxLength
    EXPECT_FALSE(prefix_ok(g, R"({"name": "Bob"})"));                      // age is required
    EXPECT_FALSE(prefix_ok(g, R"({"name": "Bob", "name")"));               // a key twice
    EXPECT_FALSE(prefix_ok(g, R"({"age": 1.5)"));
    EXPECT_FALSE(prefix_ok(g, R"({"age": 1, "name": "x", "tags": [])"));   // minItems
    EXPECT_FALSE(prefix_ok(g, R"({"age": 1, "name": "x", "tags": ["a", "b",)"));  // maxItems
    EXPECT_FALSE(prefix_ok(g, R"({"age": 1, "name": "x", "tags": ["c")"));
    EXPECT_FALSE(prefix_ok(g, R"({"age": 1, "name": "x", "tags": [8)"));
    // Once every property is given, only the end can follow.
    JsonMatcher m(g);
    ASSERT_TRUE(m.feed(R"({"name":"a","age":2,"tags":["b"])"));
    EXPECT_FALSE(m.accepts(","));
    EXPECT_TRUE(m.accepts("}"));
    // A name that needs escaping is matched as written in JSON.
    EXPECT_TRUE(document(schema(R"({"properties": {"a\"b": {"const": 1}}, "additionalProperties": false})"),
                         R"({"a\"b": 1})"));
    // additionalProperties with a schema: other keys' values follow it.
    const auto extra = schema(R"({"type": "object", "additionalProperties": {"type": "boolean"}})");
    EXPECT_TRUE(document(extra, R"({"x": true, "y": false})"));
    EXPECT_FALSE(prefix_ok(extra, R"({"x": 1)"));
}

TEST(JsonMatcher, SchemaAlternativesConstAndRefs) {
    const auto g = schema(R"({"anyOf": [{"type": "string"}, {"type": "null"}, {"const": {"k": [1, 2]}}]})");
    EXPECT_TRUE(document(g, "\"s\""));
    EXPECT_TRUE(document(g, "null"));
    EXPECT_TRUE(document(g, R"({"k":[1,2]})"));
    EXPECT_FALSE(prefix_ok(g, "1"));
    EXPECT_FALSE(prefix_ok(g, R"({"k":[1,3)"));
    const auto types = schema(R"({"type": ["integer", "boolean"]})");
    EXPECT_TRUE(document(types, "true"));
    EXPECT_TRUE(document(types, "12"));
    EXPECT_FALSE(prefix_ok(types, "\""));
    const auto enums = schema(R"({"enum": [1, 12, "x"]})");
    EXPECT_TRUE(document(enums, "1"));
    EXPECT_TRUE(document(enums, "12"));
    EXPECT_FALSE(prefix_ok(enums, "13"));
    // A recursive schema through $defs.
    const auto tree = schema(R"({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object",
        "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "required": ["v"], "additionalProperties": false}}})");
    EXPECT_TRUE(document(tree, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[]}]})"));
    EXPECT_FALSE(prefix_ok(tree, R"({"v":1,"kids":[{"w")"));
}

TEST(JsonMatcher, PrefixAndSuffix) {
    auto nodes = JsonGrammarNodes::from_schema(R"({"type": "object", "properties": {"a": {"type": "integer"}},
                                                 "required": ["a"], "additionalProperties": false})");
    nodes.prefix = "<call>";
    nodes.suffix = "</call>";
    const auto g = std::make_shared<const JsonGrammarNodes>(nodes);
    EXPECT_TRUE(document(g, "<call>{\"a\": 5}</call>"));
    EXPECT_FALSE(prefix_ok(g, "{"));
    EXPECT_FALSE(prefix_ok(g, "<call>{\"a\": 5} "));
    JsonMatcher m(g);
    ASSERT_TRUE(m.feed("<call>{\"a\": 5}"));
    EXPECT_FALSE(m.complete());
    ASSERT_TRUE(m.feed("</call>"));
    EXPECT_TRUE(m.closed());
}

TEST(JsonGrammar, RefusesKeywordsItCannotEnforce) {
    for (const auto& [text, keyword] : std::vector<std::pair<std::string, std::string>>{
             {R"({"type": "string", "pattern": "^a"})", "pattern"},
             {R"({"type": "number", "minimum": 0})", "minimum"},
             {R"({"allOf": [{"type": "string"}, {"maxLength": 2}]})", "allOf"},
             {R"({"type": "array", "items": [{"type": "string"}]})", "items"},
             {R"({"type": "decimal"})", "type"},
             {R"({"$ref": "http://example.com/s.json"})", "$ref"},
             {R"({"$ref": "#/$defs/missing"})", "$ref"},
             {R"({"type": "object", "required": ["x"]})", "required"},
             {R"({"not": {"type": "null"}})", "not"}}) {
        try {
            JsonGrammarNodes::from_schema(text);
            ADD_FAILURE() << text << " was accepted";
        } catch (const JsonSchemaError& e) {
            EXPECT_EQ(e.keyword, keyword) << text;
            EXPECT_NE(std::string(e.what()).find(keyword), std::string::npos) << e.what();
        }
    }
    EXPECT_THROW(JsonGrammarNodes::from_schema("{not json"), JsonSchemaError);
    // Annotations constrain nothing and are read past.
    EXPECT_NO_THROW(JsonGrammarNodes::from_schema(
        R"({"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "T", "description": "d",
            "type": "string", "format": "date", "examples": ["x"], "default": "y"})"));
}

TEST(ConstrainedSampling, GreedyTakesTheBestAllowedToken) {
    SamplerParams p;
    p.temperature = 0;
    Sampler s(p);
    const std::vector<float> logits = {0.1f, 3.0f, 2.0f, 1.0f};
    EXPECT_EQ(s.sample(logits.data(), 4, [](int32_t t) { return t != 1; }), 2);
    int asked = 0;
    EXPECT_EQ(s.sample(logits.data(), 4, [&](int32_t) { return ++asked, true; }), 1);
    EXPECT_EQ(asked, 1);  // the best candidate was allowed: nothing else was asked
    EXPECT_THROW(s.sample(logits.data(), 4, [](int32_t) { return false; }), SamplingError);
}

TEST(ConstrainedSampling, SamplingDrawsOnlyAllowedTokens) {
    SamplerParams p;
    p.temperature = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 7;
    Sampler s(p);
    const std::vector<float> logits = {2.0f, 2.0f, 0.0f, 1.0f, 5.0f};
    std::vector<int> counts(5);
    for (int i = 0; i < 2000; ++i) ++counts[size_t(s.sample(logits.data(), 5, [](int32_t t) { return t % 2 == 0; }))];
    EXPECT_EQ(counts[1] + counts[3], 0);
    // Among 0, 2, 4 the probabilities are softmax(2, 0, 5): about 0.047, 0.006, 0.946.
    EXPECT_NEAR(counts[4] / 2000.0, std::exp(5.0) / (std::exp(5.0) + std::exp(2.0) + 1.0), 0.02);
    EXPECT_GT(counts[0], 0);
}
