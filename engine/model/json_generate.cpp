// generate_json (vkllm/json_output.h) and generate_with_grammar (vkllm/grammar.h): a matcher of
// the grammar as Session::generate's token constraint, and TokenBytes, what it checks tokens by.
#include "sampling/gbnf_matcher.h"
#include "sampling/grammar_impl.h"
#include "sampling/json_matcher.h"
#include "sampling/json_output_impl.h"
#include "vkllm/grammar.h"
#include "vkllm/json_output.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {

TokenBytes::TokenBytes(const Model& model) {
    const int32_t n = model.n_vocab();
    bytes.resize(size_t(n));
    end_of_generation.resize(size_t(n));
    for (int32_t id = 0; id < n; ++id) {
        end_of_generation[size_t(id)] = model.is_eog(id);
        if (!model.is_control(id)) bytes[size_t(id)] = model.piece(id);
    }
}

namespace {

GenerateResult generate_constrained(Session& session, const std::vector<int32_t>& prompt, GenerateOptions options,
                                    TokenConstraint& matcher, const TokenBytes& vocabulary,
                                    const TokenCallback& on_token) {
    options.constraint = {&matcher, &vocabulary};
    return session.generate(prompt, options, on_token);
}

}  // namespace

GenerateResult generate_json(Session& session, const std::vector<int32_t>& prompt, const GenerateOptions& options,
                             const JsonGrammar& grammar, const TokenBytes& vocabulary, const TokenCallback& on_token) {
    sampling::JsonMatcher matcher(grammar.impl().nodes);
    return generate_constrained(session, prompt, options, matcher, vocabulary, on_token);
}

GenerateResult generate_with_grammar(Session& session, const std::vector<int32_t>& prompt,
                                     const GenerateOptions& options, const Grammar& grammar,
                                     const TokenBytes& vocabulary, const TokenCallback& on_token) {
    sampling::GbnfMatcher matcher(grammar.impl().rules);
    return generate_constrained(session, prompt, options, matcher, vocabulary, on_token);
}

}  // namespace vkllm
