// GbnfMatcher: which texts a GBNF grammar's root rule matches, read byte by byte (llama.cpp's
// approach). The state is a set of pushdown stacks, one per live parse: each position names a
// rule, one of its alternatives and the symbol reached; the top of every stack is a character
// set (rule references are expanded as soon as they are reached), and an empty stack is a
// whole match. A code point advances every stack whose top matches it; the rest are dropped.
// Bytes of a UTF-8 sequence may arrive across calls: a partial sequence is kept while some
// stack accepts a code point beginning with those bytes.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sampling/gbnf.h"
#include "vkllm/generate.h"

namespace vkllm::sampling {

// The most parses a matcher keeps at once (by default); a grammar more ambiguous than that on
// some text makes feed/accepts throw GbnfLimitError rather than use unbounded time per byte.
constexpr size_t kGbnfMaxStacks = 4096;

struct GbnfLimitError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class GbnfMatcher : public TokenConstraint {
public:
    explicit GbnfMatcher(std::shared_ptr<const GbnfGrammar> grammar, size_t max_stacks = kGbnfMaxStacks);

    bool feed(std::string_view bytes) override;
    // Cheap for most rejections: the first byte is looked up in a table of the bytes that can come next.
    bool accepts(std::string_view bytes) const override;
    bool complete() const override;
    bool closed() const override;
    std::string text_name() const override { return "the grammar's text"; }

    // Internal: a place in the grammar, and a parse's stack of them (the top is the back).
    struct Position {
        int32_t rule = 0, alt = 0, elem = 0;
        auto operator<=>(const Position&) const = default;
    };
    using Stack = std::vector<Position>;

private:
    // A UTF-8 sequence being read.
    struct Utf8 {
        uint32_t partial = 0;  // its bits so far
        uint8_t need = 0;      // continuation bytes still to come (0: none open)
        uint8_t length = 0;    // its length in bytes
        // Takes byte b; false when it cannot come here (or lo..hi is empty: an overlong form).
        // [lo, hi]: the code points the sequence can still become (lo itself once whole).
        bool push(uint8_t b, uint32_t& lo, uint32_t& hi);
    };
    // The stacks are shared: a copy of the state (one per candidate token) and a byte inside a
    // UTF-8 sequence, which leaves them as they are, copy a pointer.
    struct State {
        std::shared_ptr<const std::vector<Stack>> stacks;
        Utf8 utf8;
    };
    void expand(Stack s, std::vector<Stack>& out) const;
    bool step(State& st, uint8_t b) const;
    bool advance(State& st, uint32_t cp) const;
    bool possible(const State& st, uint32_t lo, uint32_t hi) const;
    const std::array<bool, 256>& next_bytes() const;
    const GbnfElement& top(const Stack& s) const;
    void dedupe(std::vector<Stack>& stacks) const;

    std::shared_ptr<const GbnfGrammar> g_;
    size_t max_stacks_;
    State st_;
    mutable std::array<bool, 256> next_{};  // next_bytes(), valid while next_valid_
    mutable bool next_valid_ = false;
    // The state after each short prefix (up to kCachedPrefix bytes) of the candidates asked
    // about (prefixes that are refused are not kept): tokens share their first bytes with many
    // others. Cleared by feed().
    static constexpr size_t kCachedPrefix = 3;
    mutable std::unordered_map<std::string, std::shared_ptr<const State>> after_prefix_;
};

}  // namespace vkllm::sampling
