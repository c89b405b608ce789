// Parses a token stream into a Template, following jinja2's grammar and operator precedence.
#pragma once

#include "template/ast.h"
#include "template/lexer.h"

namespace vkllm::jinja {

// Throws Error with the line and column of the offending token.
Template parse(const Source& source);

}  // namespace vkllm::jinja
