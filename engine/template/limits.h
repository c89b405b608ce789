// Render limits: a template is code from a model file, so parsing and rendering one must end
// in bounded time and memory whatever it says. Each limit is far above what real chat
// templates need (they nest a few levels, loop over the messages and write a few kilobytes)
// and gives a TemplateError naming the limit when crossed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vkllm::jinja::limits {

// Parser: how deeply statements and parenthesised/prefixed expressions may nest, and how deep
// one expression tree may be (left-deep chains such as a ~ b ~ c or x.a.b are built in loops,
// so the tree's depth is counted separately). Keeps the parser's and the interpreter's
// recursion far from the end of the stack.
constexpr int kMaxNesting = 64;
constexpr int kMaxExpressionDepth = 256;

// Interpreter: nested macro calls (recursion) and, over one render, the loop iterations plus
// macro calls.
constexpr int kMaxCallDepth = 64;
constexpr uint64_t kMaxSteps = 1'000'000;

// Sizes: one string or list value, the rendered text, and the bytes of all string values an
// expression produced over one render (so that copying a large string in a loop ends too).
constexpr size_t kMaxStringBytes = size_t(64) << 20;
constexpr size_t kMaxListItems = 1'000'000;
constexpr size_t kMaxOutputBytes = size_t(64) << 20;
constexpr uint64_t kMaxBytesProduced = uint64_t(1) << 30;

}  // namespace vkllm::jinja::limits
