// The syntax tree of a template: expressions and statements, each with the source offset it
// came from (for error positions).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/value.h"

namespace vkllm::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    enum class K {
        Const,    // value
        Name,     // name
        List,     // args: items
        Tuple,    // args: items (a tuple behaves as a list here)
        Dict,     // keywords: key expression text is in args (even: key, odd: value)
        Attr,     // args[0].name
        Item,     // args[0][args[1]]
        Slice,    // args[0][args[1]:args[2]:args[3]] (null parts omitted)
        Call,     // args[0](args[1..], keywords)
        Filter,   // args[0] | name(args[1..], keywords); args[0] null in a filter block
        Test,     // args[0] is [not] name(args[1..], keywords); negated
        Not,      // not args[0]
        Neg,      // -args[0]
        Pos,      // +args[0]
        Binary,   // args[0] op args[1]: + - * / // % ** ~
        And,      // args[0] and args[1]
        Or,       // args[0] or args[1]
        Compare,  // args[0] ops[0] args[1] ops[1] args[2] ...: == != < <= > >= in notin
        Cond,     // args[1] if args[0] else args[2] (args[2] may be null)
    };
    K kind;
    size_t offset = 0;
    Value value;
    std::string name;
    std::vector<std::string> ops;
    std::vector<ExprPtr> args;
    std::vector<std::pair<std::string, ExprPtr>> keywords;
    bool negated = false;
    int depth = 1;  // of the tree below and including this node (set by the parser)
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
    enum class K {
        Text,      // text
        Print,     // {{ expr }}
        If,        // conditions[i] -> bodies[i]; bodies.back() is the else body when it has one more
        For,       // for targets in expr [if cond] body [else else_body]
        Set,       // set targets = expr (targets[0] may be "ns.attr")
        SetBlock,  // set target [| filter] body endset
        Macro,     // macro name(params=defaults) body
        CallBlock, // call [(params)] expr body
        FilterBlock,  // filter name(args) body
        Break,
        Continue,
        Scope,     // {% generation %} body: rendered as is
    };
    K kind;
    size_t offset = 0;
    std::string text;                  // Text; Macro: name
    ExprPtr expr;                      // Print, For (iterable), Set, CallBlock (the call), SetBlock/FilterBlock (filter)
    ExprPtr condition;                 // For: the `if` filter
    std::vector<std::string> targets;  // For, Set, SetBlock: names ("ns.attr" for a namespace attribute)
    std::vector<ExprPtr> conditions;   // If
    std::vector<Body> bodies;          // If: one per condition (+ else); others: bodies[0] (+ For's else)
    std::vector<std::pair<std::string, ExprPtr>> params;  // Macro, CallBlock: parameters and defaults
};

struct Template {
    Body body;
};

}  // namespace vkllm::jinja
