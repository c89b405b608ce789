// What a vkllm::Grammar holds: the parsed rules, shared by every matcher built from it.
#pragma once

#include <memory>

#include "sampling/gbnf.h"
#include "vkllm/grammar.h"

namespace vkllm {

struct Grammar::Impl {
    std::shared_ptr<const sampling::GbnfGrammar> rules;
};

}  // namespace vkllm
