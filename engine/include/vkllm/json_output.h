// JSON output by constrained sampling: generation whose text is one JSON value that a grammar
// allows (any JSON object, or what a JSON Schema allows), on any vocabulary. At each step the
// candidates are checked in the sampler's order against a byte automaton: a token is allowed
// when its bytes continue the value; generation ends when the value is complete and nothing
// more can follow (an end-of-generation token is allowed only where the value is complete).
// The schema subset is listed in docs/serve.md (JSON Schema: type, properties, required,
// additionalProperties, items, minItems/maxItems, minLength/maxLength, enum, const, anyOf,
// oneOf, $ref to local definitions); any other keyword that constrains values is refused.
// Output in any shape a GBNF grammar describes: vkllm/grammar.h (the same loop, TokenBytes too).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "vkllm/generate.h"

namespace vkllm {

class Model;
class Session;

// A schema that cannot be used: the message says why; `keyword` names the JSON Schema keyword
// at fault ("pattern", "minimum", ...) when one is, else it is empty.
struct JsonSchemaError : std::invalid_argument {
    JsonSchemaError(const std::string& message, std::string keyword)
        : std::invalid_argument(message), keyword(std::move(keyword)) {}
    std::string keyword;
};

// What generated text must be: optional literal text, one JSON value, optional literal text.
class JsonGrammar {
public:
    // Any JSON object (OpenAI's response_format {"type": "json_object"}).
    static JsonGrammar any_object();
    // The values a JSON Schema (its text) allows. Throws JsonSchemaError.
    static JsonGrammar from_schema(const std::string& schema);
    // The same value written between `prefix` and `suffix` (e.g. a tool-call tag).
    JsonGrammar wrapped(const std::string& prefix, const std::string& suffix) const;

    struct Impl;
    const Impl& impl() const { return *impl_; }

private:
    explicit JsonGrammar(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
    std::shared_ptr<const Impl> impl_;
};

// Each token's bytes and whether it ends generation, read once per model (the automaton checks
// tokens by their bytes, so byte-level BPE and SentencePiece vocabularies work alike).
struct TokenBytes {
    explicit TokenBytes(const Model& model);
    std::vector<std::string> bytes;  // [n_vocab]; empty for control tokens
    std::vector<bool> end_of_generation;
};

// Session::generate with the grammar as GenerateOptions::constraint: the same loop, prompt
// reuse, sampler, events, stop strings and results (options.draft must be empty). A generation
// that completes the value ends with StopReason::EndOfGeneration (no end-of-generation token is
// sampled when the value cannot continue); max_tokens or a stop string can still cut it short.
// The callback or Session::cancel() stops it early, and Session::snapshot() shows its progress.
// When no token of the vocabulary continues the value the result is an Error naming it.
GenerateResult generate_json(Session& session, const std::vector<int32_t>& prompt, const GenerateOptions& options,
                             const JsonGrammar& grammar, const TokenBytes& vocabulary,
                             const TokenCallback& on_token = nullptr);

}  // namespace vkllm
