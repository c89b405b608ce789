// Renders a parsed template: statements write text, expressions evaluate to Values.
// Scoping follows jinja2: a for loop's body and a macro's body have their own variables, `if`
// does not; `{% set ns.attr %}` writes through to a namespace().
#pragma once

#include <ctime>
#include <functional>
#include <string>

#include "template/ast.h"
#include "template/lexer.h"
#include "template/value.h"

namespace vkllm::jinja {

// `variables` are the template's inputs (messages, add_generation_prompt, ...); the globals
// (range, namespace, raise_exception, strftime_now formatting `now`, ...) come underneath.
// Throws Error with the line and column of the failing expression or statement; `cancelled`
// (may be empty) is polled as the render works (template/budget.h) and stops it with
// Error::cancellation() when it returns true.
std::string render(const Template& tpl, const Source& source, const Dict& variables, const std::tm& now,
                   const std::function<bool()>& cancelled);

}  // namespace vkllm::jinja
