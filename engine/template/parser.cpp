#include "template/parser.h"

#include <cerrno>

#include "template/builtins.h"
#include "template/limits.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <initializer_list>

namespace vkllm::jinja {

namespace {

class Parser {
public:
    Parser(const Source& source, std::vector<Token> tokens) : src_(source), t_(std::move(tokens)) {}

    Template run() {
        Template tpl;
        std::string end;
        tpl.body = parse_body({}, end);
        return tpl;
    }

private:
    const Source& src_;
    std::vector<Token> t_;
    size_t i_ = 0;
    // Inside an `if` (its tests and bodies) or an inline if-expression, and not in a loop or macro
    // body below it: there jinja2 lets an unknown filter or test fail only when it runs; anywhere
    // else it is an error when the template is parsed.
    bool soft_ = false;

    // Sets soft_ for one scope and restores it.
    struct Soft {
        Parser& p;
        bool old;
        Soft(Parser& parser, bool value) : p(parser), old(parser.soft_) { p.soft_ = value; }
        ~Soft() { p.soft_ = old; }
    };

    void check_known(bool filter, const std::string& name, size_t offset) const {
        if (soft_ || (filter ? has_filter(name) : has_test(name))) return;
        fail(std::string("No ") + (filter ? "filter" : "test") + " named '" + name + "'.", offset);
    }

    const Token& cur() const { return t_[i_]; }
    const Token& peek(size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
    const Token& next() { return t_[i_ < t_.size() - 1 ? i_++ : i_]; }

    [[noreturn]] void fail(const std::string& message, size_t offset) const {
        int line, column;
        src_.position(offset, line, column);
        throw Error(message, line, column);
    }
    [[noreturn]] void fail_here(const std::string& message) const { fail(message, cur().offset); }

    // An integer token's value; one beyond 64 bits is an error (Python's would be a big int).
    int64_t integer_literal(const Token& t) const {
        errno = 0;
        const long long v = std::strtoll(t.text.c_str(), nullptr, 10);
        if (errno == ERANGE) {
            const std::string shown = t.text.size() > 40 ? t.text.substr(0, 40) + "..." : t.text;
            fail("the integer " + shown + " does not fit a 64-bit integer (integers are 64-bit here)", t.offset);
        }
        return v;
    }

    static std::string describe(const Token& t) {
        switch (t.type) {
            case Tok::Text: return "template text";
            case Tok::VarBegin: return "'{{'";
            case Tok::VarEnd: return "'}}'";
            case Tok::BlockBegin: return "'{%'";
            case Tok::BlockEnd: return "'%}'";
            case Tok::String: return "string";
            case Tok::End: return "end of template";
            default: return "'" + t.text + "'";
        }
    }

    bool is_op(const char* op) const { return cur().type == Tok::Op && cur().text == op; }
    bool is_name(const char* name) const { return cur().type == Tok::Name && cur().text == name; }
    bool skip_op(const char* op) {
        if (!is_op(op)) return false;
        next();
        return true;
    }
    bool skip_name(const char* name) {
        if (!is_name(name)) return false;
        next();
        return true;
    }
    void expect_op(const char* op) {
        if (!skip_op(op)) fail_here(std::string("expected '") + op + "', got " + describe(cur()));
    }
    void expect(Tok type, const char* what) {
        if (cur().type != type) fail_here(std::string("expected ") + what + ", got " + describe(cur()));
        next();
    }
    std::string expect_name() {
        if (cur().type != Tok::Name) fail_here("expected a name, got " + describe(cur()));
        return next().text;
    }

    // Counts one level of parser recursion for its lifetime (limits::kMaxNesting).
    int nesting_ = 0;
    struct Nest {
        Parser& p;
        explicit Nest(Parser& parser) : p(parser) {
            if (p.nesting_ >= limits::kMaxNesting)
                p.fail_here("template nested too deeply (limit: " + std::to_string(limits::kMaxNesting) + " levels)");
            ++p.nesting_;
        }
        ~Nest() { --p.nesting_; }
        Nest(const Nest&) = delete;
        Nest& operator=(const Nest&) = delete;
    };

    // Records the depth of a node whose children are all in place; every node with children
    // passes here before it becomes a child itself (limits::kMaxExpressionDepth).
    ExprPtr seal(ExprPtr e) {
        int below = 0;
        for (const auto& a : e->args)
            if (a) below = std::max(below, a->depth);
        for (const auto& kw : e->keywords)
            if (kw.second) below = std::max(below, kw.second->depth);
        e->depth = below + 1;
        if (e->depth > limits::kMaxExpressionDepth)
            fail("expression too deep (limit: " + std::to_string(limits::kMaxExpressionDepth) + " levels)", e->offset);
        return e;
    }

    ExprPtr make(Expr::K kind, size_t offset) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->offset = offset;
        return e;
    }

    // ---- statements ----

    // Parses until `{% <one of ends> ...`; leaves the keyword as the current token and returns
    // it in `end`. At the top level (no ends), parses to the end of the template.
    Body parse_body(std::initializer_list<const char*> ends, std::string& end) {
        Nest nest(*this);
        Body body;
        while (true) {
            const Token& t = cur();
            std::string want;
            for (const char* e : ends) want += std::string(want.empty() ? ", expected " : " or ") + "'" + e + "'";
            if (t.type == Tok::End) {
                if (ends.size()) fail_here("unexpected end of template" + want);
                return body;
            }
            if (t.type == Tok::Text) {
                auto s = std::make_unique<Stmt>();
                s->kind = Stmt::K::Text;
                s->offset = t.offset;
                s->text = t.text;
                body.push_back(std::move(s));
                next();
            } else if (t.type == Tok::VarBegin) {
                auto s = std::make_unique<Stmt>();
                s->kind = Stmt::K::Print;
                s->offset = t.offset;
                next();
                s->expr = parse_tuple();
                expect(Tok::VarEnd, "'}}'");
                body.push_back(std::move(s));
            } else if (t.type == Tok::BlockBegin) {
                const Token& kw = peek();
                if (kw.type == Tok::Name)
                    for (const char* e : ends)
                        if (kw.text == e) {
                            next();
                            end = kw.text;
                            return body;
                        }
                static const char* closers[] = {"elif", "else", "endif", "endfor", "endset", "endmacro",
                                                "endcall", "endfilter", "endgeneration", "endraw"};
                for (const char* c : closers)
                    if (kw.type == Tok::Name && kw.text == c) fail("unexpected '" + kw.text + "'" + want, kw.offset);
                next();
                body.push_back(parse_statement());
            } else {
                fail_here("unexpected " + describe(t));
            }
        }
    }

    void end_tag() { expect(Tok::BlockEnd, "'%}'"); }

    StmtPtr parse_statement() {
        const Token& kw = cur();
        if (kw.type != Tok::Name) fail_here("expected a statement name, got " + describe(kw));
        auto s = std::make_unique<Stmt>();
        s->offset = kw.offset;
        std::string name = next().text;
        std::string end;
        if (name == "if") {
            Soft soft(*this, true);
            s->kind = Stmt::K::If;
            s->conditions.push_back(parse_expression(false));
            end_tag();
            while (true) {
                s->bodies.push_back(parse_body({"elif", "else", "endif"}, end));
                next();
                if (end == "elif") {
                    s->conditions.push_back(parse_expression(false));
                    end_tag();
                } else if (end == "else") {
                    end_tag();
                    s->bodies.push_back(parse_body({"endif"}, end));
                    next();
                    end_tag();
                    break;
                } else {
                    end_tag();
                    break;
                }
            }
        } else if (name == "for") {
            s->kind = Stmt::K::For;
            s->targets = parse_targets(false);
            if (!skip_name("in")) fail_here("expected 'in', got " + describe(cur()));
            s->expr = parse_tuple(false, true);
            Soft hard(*this, false);  // the loop's condition and body
            if (skip_name("if")) s->condition = parse_expression(true);
            if (is_name("recursive")) fail_here("recursive loops are not supported");
            end_tag();
            s->bodies.push_back(parse_body({"else", "endfor"}, end));
            next();
            end_tag();
            if (end == "else") {
                s->bodies.push_back(parse_body({"endfor"}, end));
                next();
                end_tag();
            }
        } else if (name == "set") {
            s->targets = parse_targets(true);
            if (skip_op("=")) {
                s->kind = Stmt::K::Set;
                s->expr = parse_tuple();
                end_tag();
            } else {
                Soft hard(*this, false);
                s->kind = Stmt::K::SetBlock;
                if (s->targets.size() != 1) fail(s->targets.size() ? "a block set takes one name" : "expected '='", s->offset);
                if (is_op("|")) s->expr = parse_filters(nullptr);
                end_tag();
                s->bodies.push_back(parse_body({"endset"}, end));
                next();
                end_tag();
            }
        } else if (name == "macro") {
            Soft hard(*this, false);
            s->kind = Stmt::K::Macro;
            s->text = expect_name();
            parse_params(s->params);
            end_tag();
            s->bodies.push_back(parse_body({"endmacro"}, end));
            next();
            end_tag();
        } else if (name == "call") {
            Soft hard(*this, false);
            s->kind = Stmt::K::CallBlock;
            if (is_op("(")) parse_params(s->params);
            s->expr = parse_expression(true);
            if (s->expr->kind != Expr::K::Call) fail("expected a call", s->expr->offset);
            end_tag();
            s->bodies.push_back(parse_body({"endcall"}, end));
            next();
            end_tag();
        } else if (name == "filter") {
            Soft hard(*this, false);
            s->kind = Stmt::K::FilterBlock;
            s->expr = parse_filters(nullptr, true);
            end_tag();
            s->bodies.push_back(parse_body({"endfilter"}, end));
            next();
            end_tag();
        } else if (name == "generation") {
            Soft hard(*this, false);
            s->kind = Stmt::K::Scope;
            end_tag();
            s->bodies.push_back(parse_body({"endgeneration"}, end));
            next();
            end_tag();
        } else if (name == "break" || name == "continue") {
            s->kind = name == "break" ? Stmt::K::Break : Stmt::K::Continue;
            end_tag();
        } else {
            fail("unknown statement '" + name + "'", s->offset);
        }
        return s;
    }

    // `a`, `a, b`, `(a, b)` or (for set) `ns.attr`.
    std::vector<std::string> parse_targets(bool allow_attr) {
        std::vector<std::string> names;
        bool paren = skip_op("(");
        do {
            std::string n = expect_name();
            if (allow_attr && is_op(".")) {
                next();
                n += "." + expect_name();
            }
            names.push_back(n);
        } while (skip_op(","));
        if (paren) expect_op(")");
        return names;
    }

    void parse_params(std::vector<std::pair<std::string, ExprPtr>>& params) {
        expect_op("(");
        while (!is_op(")")) {
            if (!params.empty()) expect_op(",");
            if (is_op(")")) break;
            std::string n = expect_name();
            ExprPtr def;
            if (skip_op("=")) def = parse_expression(true);
            params.emplace_back(n, std::move(def));
        }
        next();
    }

    // ---- expressions ----

    // `a, b` is a tuple (only where jinja2 allows one: prints, set values, for iterables).
    ExprPtr parse_tuple(bool with_condexpr = true, bool stop_at_if = false) {
        size_t offset = cur().offset;
        ExprPtr first = parse_expression(with_condexpr && !stop_at_if);
        if (!is_op(",")) return first;
        auto t = make(Expr::K::Tuple, offset);
        t->args.push_back(std::move(first));
        while (skip_op(",")) {
            if (cur().type == Tok::VarEnd || cur().type == Tok::BlockEnd || is_name("if")) break;
            t->args.push_back(parse_expression(with_condexpr && !stop_at_if));
        }
        return seal(std::move(t));
    }

    ExprPtr parse_expression(bool with_condexpr = true) {
        Nest nest(*this);
        ExprPtr e = parse_or();
        if (!with_condexpr) return e;
        while (is_name("if")) {
            size_t offset = cur().offset;
            next();
            auto c = make(Expr::K::Cond, offset);
            Soft soft(*this, true);
            c->args.push_back(parse_or());
            c->args.push_back(std::move(e));
            c->args.push_back(skip_name("else") ? parse_expression(true) : nullptr);
            e = seal(std::move(c));
        }
        return e;
    }

    ExprPtr binary(Expr::K kind, ExprPtr a, ExprPtr b, size_t offset, std::string op = "") {
        auto e = make(kind, offset);
        e->name = std::move(op);
        e->args.push_back(std::move(a));
        e->args.push_back(std::move(b));
        return seal(std::move(e));
    }

    ExprPtr parse_or() {
        ExprPtr e = parse_and();
        while (is_name("or")) {
            size_t o = next().offset;
            e = binary(Expr::K::Or, std::move(e), parse_and(), o);
        }
        return e;
    }

    ExprPtr parse_and() {
        ExprPtr e = parse_not();
        while (is_name("and")) {
            size_t o = next().offset;
            e = binary(Expr::K::And, std::move(e), parse_not(), o);
        }
        return e;
    }

    ExprPtr parse_not() {
        if (is_name("not")) {
            Nest nest(*this);
            auto e = make(Expr::K::Not, next().offset);
            e->args.push_back(parse_not());
            return seal(std::move(e));
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        size_t offset = cur().offset;
        ExprPtr first = parse_math1();
        ExprPtr cmp;
        while (true) {
            std::string op;
            if (cur().type == Tok::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                          cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
                op = next().text;
            } else if (is_name("in")) {
                next();
                op = "in";
            } else if (is_name("not") && peek().type == Tok::Name && peek().text == "in") {
                next();
                next();
                op = "notin";
            } else {
                break;
            }
            if (!cmp) {
                cmp = make(Expr::K::Compare, offset);
                cmp->args.push_back(std::move(first));
            }
            cmp->ops.push_back(op);
            cmp->args.push_back(parse_math1());
        }
        return cmp ? seal(std::move(cmp)) : std::move(first);
    }

    ExprPtr parse_math1() {
        ExprPtr e = parse_concat();
        while (is_op("+") || is_op("-")) {
            const Token& t = next();
            e = binary(Expr::K::Binary, std::move(e), parse_concat(), t.offset, t.text);
        }
        return e;
    }

    ExprPtr parse_concat() {
        ExprPtr e = parse_math2();
        while (is_op("~")) {
            size_t o = next().offset;
            e = binary(Expr::K::Binary, std::move(e), parse_math2(), o, "~");
        }
        return e;
    }

    ExprPtr parse_math2() {
        ExprPtr e = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const Token& t = next();
            e = binary(Expr::K::Binary, std::move(e), parse_pow(), t.offset, t.text);
        }
        return e;
    }

    ExprPtr parse_pow() {
        ExprPtr e = parse_unary();
        while (is_op("**")) {
            size_t o = next().offset;
            e = binary(Expr::K::Binary, std::move(e), parse_unary(), o, "**");
        }
        return e;
    }

    ExprPtr parse_unary(bool with_filter = true) {
        ExprPtr e;
        if (is_op("-") || is_op("+")) {
            Nest nest(*this);
            const Token& t = next();
            e = make(t.text == "-" ? Expr::K::Neg : Expr::K::Pos, t.offset);
            e->args.push_back(parse_unary(false));
            e = seal(std::move(e));
        } else {
            e = parse_primary();
        }
        e = parse_postfix(std::move(e));
        if (with_filter) e = parse_filter_expr(std::move(e));
        return e;
    }

    ExprPtr parse_primary() {
        const Token& t = cur();
        if (t.type == Tok::Name) {
            next();
            const std::string& n = t.text;
            auto c = make(Expr::K::Const, t.offset);
            if (n == "true" || n == "True") c->value = Value::from(true);
            else if (n == "false" || n == "False") c->value = Value::from(false);
            else if (n == "none" || n == "None") c->value = Value::none();
            else {
                c->kind = Expr::K::Name;
                c->name = n;
            }
            return c;
        }
        if (t.type == Tok::String) {
            auto c = make(Expr::K::Const, t.offset);
            std::string s;
            while (cur().type == Tok::String) s += next().text;  // adjacent strings join
            c->value = Value::from(s);
            return c;
        }
        if (t.type == Tok::Int || t.type == Tok::Float) {
            auto c = make(Expr::K::Const, t.offset);
            if (t.type == Tok::Int) c->value = Value::from(integer_literal(t));
            else c->value = Value::from(std::strtod(t.text.c_str(), nullptr));
            next();
            return c;
        }
        if (is_op("(")) {
            size_t offset = next().offset;
            if (skip_op(")")) return make(Expr::K::Tuple, offset);
            ExprPtr e = parse_tuple();
            expect_op(")");
            return e;
        }
        if (is_op("[")) {
            auto l = make(Expr::K::List, next().offset);
            while (!is_op("]")) {
                if (!l->args.empty()) expect_op(",");
                if (is_op("]")) break;
                l->args.push_back(parse_expression());
            }
            next();
            return seal(std::move(l));
        }
        if (is_op("{")) {
            auto d = make(Expr::K::Dict, next().offset);
            while (!is_op("}")) {
                if (!d->args.empty()) expect_op(",");
                if (is_op("}")) break;
                d->args.push_back(parse_expression());
                expect_op(":");
                d->args.push_back(parse_expression());
            }
            next();
            return seal(std::move(d));
        }
        fail_here("unexpected " + describe(t));
    }

    ExprPtr parse_postfix(ExprPtr e) {
        while (true) {
            if (is_op(".")) {
                size_t offset = next().offset;
                if (cur().type == Tok::Name) {
                    auto a = make(Expr::K::Attr, offset);
                    a->name = next().text;
                    a->args.push_back(std::move(e));
                    e = seal(std::move(a));
                } else if (cur().type == Tok::Int) {
                    auto a = make(Expr::K::Item, offset);
                    a->args.push_back(std::move(e));
                    auto idx = make(Expr::K::Const, cur().offset);
                    idx->value = Value::from(integer_literal(next()));
                    a->args.push_back(std::move(idx));
                    e = seal(std::move(a));
                } else {
                    fail_here("expected a name after '.'");
                }
            } else if (is_op("[")) {
                e = parse_subscript(std::move(e));
            } else if (is_op("(")) {
                e = parse_call(std::move(e));
            } else {
                return e;
            }
        }
    }

    ExprPtr parse_subscript(ExprPtr e) {
        size_t offset = next().offset;  // '['
        ExprPtr parts[3];
        bool slice = false;
        int part = 0;
        while (!is_op("]")) {
            if (is_op(":")) {
                next();
                slice = true;
                if (++part > 2) fail_here("too many ':' in a slice");
                continue;
            }
            if (parts[part]) fail_here("unexpected " + describe(cur()));
            parts[part] = parse_expression();
        }
        next();
        auto s = make(slice ? Expr::K::Slice : Expr::K::Item, offset);
        s->args.push_back(std::move(e));
        if (!slice) {
            if (!parts[0]) fail("expected an index", offset);
            s->args.push_back(std::move(parts[0]));
        } else {
            for (auto& p : parts) s->args.push_back(std::move(p));
        }
        return seal(std::move(s));
    }

    void parse_call_args(Expr& call) {
        expect_op("(");
        while (!is_op(")")) {
            if (cur().type == Tok::Op && (cur().text == "*" || cur().text == "**"))
                fail_here("*args and **kwargs in calls are not supported");
            if (cur().type == Tok::Name && peek().type == Tok::Op && peek().text == "=") {
                std::string n = next().text;
                next();
                call.keywords.emplace_back(n, parse_expression());
            } else {
                if (!call.keywords.empty()) fail_here("positional argument after keyword arguments");
                call.args.push_back(parse_expression());
            }
            if (!skip_op(",")) break;
        }
        expect_op(")");
    }

    ExprPtr parse_call(ExprPtr callee) {
        auto c = make(Expr::K::Call, cur().offset);
        c->args.push_back(std::move(callee));
        parse_call_args(*c);
        return seal(std::move(c));
    }

    // `| name(args) | name ...`; `e` is null in filter blocks and block sets.
    ExprPtr parse_filters(ExprPtr e, bool start_inline = false) {
        while (is_op("|") || start_inline) {
            size_t offset = cur().offset;
            if (!start_inline) next();
            start_inline = false;
            auto f = make(Expr::K::Filter, offset);
            f->name = expect_name();
            while (is_op(".")) {
                next();
                f->name += "." + expect_name();
            }
            check_known(true, f->name, offset);
            f->args.push_back(std::move(e));
            if (is_op("(")) parse_call_args(*f);
            e = seal(std::move(f));
        }
        return e;
    }

    ExprPtr parse_filter_expr(ExprPtr e) {
        while (true) {
            if (is_op("|")) {
                e = parse_filters(std::move(e));
            } else if (is_name("is")) {
                auto t = make(Expr::K::Test, next().offset);
                t->negated = skip_name("not");
                size_t name_offset = cur().offset;
                t->name = expect_name();
                while (is_op(".")) {
                    next();
                    t->name += "." + expect_name();
                }
                check_known(false, t->name, name_offset);
                t->args.push_back(std::move(e));
                const Token& c = cur();
                if (is_op("(")) {
                    parse_call_args(*t);
                } else if ((c.type == Tok::Name || c.type == Tok::String || c.type == Tok::Int ||
                            c.type == Tok::Float || is_op("[") || is_op("{")) &&
                           !is_name("else") && !is_name("or") && !is_name("and")) {
                    if (is_name("is")) fail_here("You cannot chain multiple tests with is");
                    t->args.push_back(parse_postfix(parse_primary()));
                }
                e = seal(std::move(t));
            } else if (is_op("(")) {
                e = parse_call(std::move(e));
            } else {
                return e;
            }
        }
    }
};

}  // namespace

Template parse(const Source& source) { return Parser(source, tokenize(source)).run(); }

}  // namespace vkllm::jinja
