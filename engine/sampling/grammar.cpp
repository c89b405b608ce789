// vkllm::Grammar (vkllm/grammar.h): a shared, immutable GbnfGrammar.
#include "sampling/grammar_impl.h"

namespace vkllm {

Grammar Grammar::from_gbnf(const std::string& text) {
    return Grammar(std::make_shared<const Impl>(
        Impl{std::make_shared<const sampling::GbnfGrammar>(sampling::GbnfGrammar::parse(text))}));
}

size_t Grammar::n_rules() const { return impl_->rules->rules.size(); }

}  // namespace vkllm
