// What a vkllm::JsonGrammar holds: the grammar's nodes, shared by every matcher built from it.
#pragma once

#include <memory>

#include "sampling/json_grammar.h"
#include "vkllm/json_output.h"

namespace vkllm {

struct JsonGrammar::Impl {
    std::shared_ptr<const sampling::JsonGrammarNodes> nodes;
};

}  // namespace vkllm
