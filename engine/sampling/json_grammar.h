// A JSON grammar for constrained sampling: the JSON values a (subset of) JSON Schema allows, as
// a graph of nodes that JsonMatcher (json_matcher.h) walks byte by byte.
//
// The schema subset (anything else that constrains a value is refused, naming the keyword):
//   type: object | array | string | number | integer | boolean | null, or a list of them
//   object: properties, required, additionalProperties (false, true or a schema; absent: true)
//   array: items (a schema), minItems, maxItems
//   string: minLength, maxLength (in characters; an escape is one)
//   enum, const (any JSON values, matched as their compact text), anyOf, oneOf (as anyOf),
//   allOf of one schema, $ref to "#", "#/$defs/NAME" or "#/definitions/NAME"
//   annotations, which constrain nothing, are skipped: title, description, default, examples,
//   $schema, $id, $comment, $defs, definitions, format, deprecated, readOnly, writeOnly
// Bounds that keep every value finite in length: numbers have at most kMaxDigits digits in
// each part, nesting is at most kMaxDepth deep, and whitespace between tokens is one space, or
// one or two newlines followed by at most kMaxWhitespace spaces or tabs (llama.cpp's JSON
// grammars allow the same; it keeps a small model from writing blank lines forever).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vkllm/json_output.h"

namespace vkllm::sampling {

// A schema the grammar cannot be built from (the public type: the keyword at fault).
using JsonSchemaError = vkllm::JsonSchemaError;

constexpr int kMaxDigits = 16;
constexpr int kMaxDepth = 32;
constexpr int kMaxWhitespace = 20;
constexpr int kMaxProperties = 64;  // properties of one object schema (a bit mask tracks them)

struct JsonNode {
    enum class Kind : uint8_t { Any, Object, Array, String, Number, Integer, Literals, AnyOf };
    Kind kind = Kind::Any;
    // Object: the properties (name as written inside JSON quotes, escapes included) and their
    // value nodes; `required` a bit per property; `additional`: the node of any other key's
    // value, -1 when no other key is allowed.
    std::vector<std::string> names;
    std::vector<int> values;
    uint64_t required = 0;
    int additional = -1;
    // Array
    int items = -1;
    int min_items = 0, max_items = -1;  // -1: no maximum
    // String (characters)
    int min_length = 0, max_length = -1;
    // Literals: the exact texts allowed (true, false, null, enum and const values)
    std::vector<std::string> literals;
    // AnyOf: the alternatives
    std::vector<int> options;
};

// Nodes by index; `root` is where a value starts. prefix and suffix: literal text before and
// after the value (empty for a bare value).
struct JsonGrammarNodes {
    std::vector<JsonNode> nodes;
    int root = 0;
    std::string prefix, suffix;

    // Node indices every grammar has (the first nodes): any JSON value, any object, any array,
    // any string, any number, and the literals true, false and null.
    static constexpr int kAny = 0, kAnyObject = 1, kAnyArray = 2, kAnyString = 3, kAnyNumber = 4, kAnyLiteral = 5;

    // Any JSON object (OpenAI's response_format json_object).
    static JsonGrammarNodes any_object();
    // The values `schema` (JSON Schema text) allows. Throws JsonSchemaError.
    static JsonGrammarNodes from_schema(const std::string& schema);
};

}  // namespace vkllm::sampling
