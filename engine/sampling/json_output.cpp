// vkllm::JsonGrammar (vkllm/json_output.h): a shared, immutable JsonGrammarNodes.
#include "sampling/json_grammar.h"
#include "sampling/json_output_impl.h"

namespace vkllm {

JsonGrammar JsonGrammar::any_object() {
    return JsonGrammar(std::make_shared<const Impl>(
        Impl{std::make_shared<const sampling::JsonGrammarNodes>(sampling::JsonGrammarNodes::any_object())}));
}

JsonGrammar JsonGrammar::from_schema(const std::string& schema) {
    return JsonGrammar(std::make_shared<const Impl>(
        Impl{std::make_shared<const sampling::JsonGrammarNodes>(sampling::JsonGrammarNodes::from_schema(schema))}));
}

JsonGrammar JsonGrammar::wrapped(const std::string& prefix, const std::string& suffix) const {
    sampling::JsonGrammarNodes g = *impl_->nodes;
    g.prefix = prefix;
    g.suffix = suffix;
    return JsonGrammar(std::make_shared<const Impl>(Impl{std::make_shared<const sampling::JsonGrammarNodes>(std::move(g))}));
}

}  // namespace vkllm
