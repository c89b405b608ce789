// JsonMatcher: a pushdown automaton over bytes that accepts exactly the texts of a JsonGrammarNodes
// (its prefix, one JSON value the grammar allows, its suffix). Constrained sampling keeps one
// per generation and asks, for each candidate token, whether the token's bytes continue the
// text (accepts()), then feeds the chosen token's bytes (feed()).
//
// The state is a set of alternatives (anyOf, enum values sharing a first byte, a type list),
// each a stack of frames, one per value being read; an alternative that cannot take a byte is
// dropped, and the text is rejected when none is left. Strings are checked to be UTF-8
// (no overlong forms or surrogates), escapes to be JSON's (\uXXXX surrogates in pairs), and no
// control character is allowed in them.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sampling/json_grammar.h"
#include "vkllm/generate.h"

namespace vkllm::sampling {

class JsonMatcher : public TokenConstraint {
public:
    explicit JsonMatcher(std::shared_ptr<const JsonGrammarNodes> grammar);

    // Advances by `bytes`. False (and the matcher unchanged) when they cannot continue the text.
    bool feed(std::string_view bytes) override;
    // Whether feed(bytes) would succeed; the matcher is unchanged. Cheap for most rejections:
    // the first byte is looked up in a table of the bytes that can come next.
    bool accepts(std::string_view bytes) const override;
    // The text so far is a whole document: generation may end here.
    bool complete() const override;
    // No byte can follow (the document is complete and closed): generation must end here.
    bool closed() const override;
    std::string text_name() const override { return "the JSON value"; }

    // Internal: one frame of an alternative's stack (public for the implementation's helpers).
    struct Frame {
        enum class Type : uint8_t { Value, Object, Array, String, Number, Literal, Text };
        Type type = Type::Value;
        uint8_t state = 0;     // per type (see json_matcher.cpp)
        int node = 0;          // the grammar node (Literal: the node holding the literal)
        int count = 0;         // Array: items begun; String: characters; Literal/Text: bytes matched
        int index = 0;         // Literal: which literal; Object: the value node of the key just read
        uint64_t seen = 0;     // Object: the properties present
        std::string key;       // Object: the key being read (raw bytes, escapes as written)
        // String scanning (strings and keys): escape state, UTF-8 continuation bytes expected
        // and the range the next one must fall in, a pending \uXXXX value.
        uint8_t escape = 0, utf8_left = 0, utf8_lo = 0x80, utf8_hi = 0xBF;
        uint16_t code = 0;
        bool operator==(const Frame&) const = default;
    };
    struct Stack {
        std::vector<Frame> frames;
        // The whitespace just read (see json_grammar.h): one space, or newlines then indentation.
        bool space = false;
        uint8_t newlines = 0, indent = 0;
        bool operator==(const Stack&) const = default;
    };

private:
    void step(Stack s, uint8_t b, std::vector<Stack>& out) const;
    void start_value(Stack& s, int node, uint8_t b, std::vector<Stack>& out) const;
    bool advance(std::vector<Stack>& alts, std::string_view bytes) const;
    const std::array<bool, 256>& next_bytes() const;

    std::shared_ptr<const JsonGrammarNodes> g_;
    std::vector<Stack> alts_;
    mutable std::array<bool, 256> next_{};  // next_bytes(), valid while next_valid_
    mutable bool next_valid_ = false;
};

}  // namespace vkllm::sampling
