// Output constrained by a GBNF grammar (llama.cpp's format; docs/serve.md lists what is
// supported): generation whose text the grammar's `root` rule matches, on any vocabulary. It is
// Session::generate's loop with a GBNF matcher as GenerateOptions::constraint deciding which
// tokens may be sampled: a token is allowed when its bytes continue a match, an
// end-of-generation token only where the text is a whole match, and generation ends when
// nothing more can follow.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "vkllm/generate.h"
#include "vkllm/json_output.h"

namespace vkllm {

class Session;

// A grammar that cannot be used: `line` and `column` (from 1) say where, `reason` what is wrong;
// what() is "LINE:COLUMN: REASON".
struct GrammarError : std::invalid_argument {
    GrammarError(int line, int column, const std::string& reason)
        : std::invalid_argument(std::to_string(line) + ":" + std::to_string(column) + ": " + reason),
          line(line), column(column), reason(reason) {}
    int line, column;
    std::string reason;
};

class Grammar {
public:
    // Parses GBNF text. Throws GrammarError.
    static Grammar from_gbnf(const std::string& text);
    // The number of rules, generated ones (groups, repetitions) included.
    size_t n_rules() const;

    struct Impl;
    const Impl& impl() const { return *impl_; }

private:
    explicit Grammar(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
    std::shared_ptr<const Impl> impl_;
};

// As generate_json, with the grammar's constraint: a generation that completes a match ends with
// StopReason::EndOfGeneration; when no token continues the text (or the grammar is so
// ambiguous that the matcher's bound on live parses is passed) the result is an Error naming it.
GenerateResult generate_with_grammar(Session& session, const std::vector<int32_t>& prompt,
                                     const GenerateOptions& options, const Grammar& grammar,
                                     const TokenBytes& vocabulary, const TokenCallback& on_token = nullptr);

}  // namespace vkllm
