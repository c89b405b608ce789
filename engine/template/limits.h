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

// Values: how deeply lists and dicts may nest in an operation that walks them (==, <, str(),
// tojson, the JSON inputs), far beyond what JSON tool schemas nest.
constexpr int kMaxValueDepth = 256;

// Sizes: one string or list value and the rendered text. Checked before a value is built.
constexpr size_t kMaxStringBytes = size_t(64) << 20;
constexpr size_t kMaxListItems = 1'000'000;
constexpr size_t kMaxOutputBytes = size_t(64) << 20;

// Work, over one render, in units of about a byte copied: copying, comparing or scanning a
// byte costs 1; in a string of kLargeStringBytes or more kLargeByteWork (it is written to
// fresh memory rather than cache), from kHugeStringBytes kHugeByteWork (the kernel maps its
// pages as they are written); decoding or case-mapping a byte kCharWork; copying or comparing
// a value (a list item, a dict entry) kValueWork; evaluating an expression or running a
// statement kNodeWork; a loop iteration or macro call kStepWork more. What the sizes and steps
// above leave unbounded is time: a list or string rebuilt in a loop (quadratic), a large value
// copied or compared over and over, a long loop body. The budget is about a second of
// rendering at most, less where values are copied (which real templates do little of: they
// evaluate expressions over their messages). On a conversation of a thousand messages (half a
// megabyte), the real templates of tests/golden/templates use a third of it at most, but for
// one that rebuilds its whole output by `~` for every message (three quarters).
constexpr uint64_t kMaxWork = uint64_t(1) << 33;
constexpr uint64_t kLargeStringBytes = uint64_t(128) << 10;
constexpr uint64_t kLargeByteWork = 4;
constexpr uint64_t kHugeStringBytes = uint64_t(4) << 20;
constexpr uint64_t kHugeByteWork = 16;
constexpr uint64_t kCharWork = 64;
constexpr uint64_t kValueWork = 2048;
constexpr uint64_t kNodeWork = 256;
constexpr uint64_t kStepWork = 1024;
// How often (in work units: about a millisecond of rendering) the cancellation callback is
// polled.
constexpr uint64_t kPollWork = uint64_t(1) << 22;

}  // namespace vkllm::jinja::limits
