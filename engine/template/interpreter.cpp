#include "template/interpreter.h"

#include <map>

#include "template/budget.h"
#include "template/builtins.h"
#include "template/limits.h"

namespace vkllm::jinja {

namespace {

struct Scope {
    std::map<std::string, Value> vars;
    Scope* parent = nullptr;

    const Value* find(const std::string& name) const {
        for (const Scope* s = this; s; s = s->parent) {
            auto it = s->vars.find(name);
            if (it != s->vars.end()) return &it->second;
        }
        return nullptr;
    }
};

enum class Flow { Normal, Break, Continue };

// a ~ b: the string limit checked before the copy.
Value concat(const std::string& a, const std::string& b) {
    const uint64_t n = add_sat(a.size(), b.size());
    check_string_size(n);
    charge_string(n);
    std::string out;
    out.reserve(size_t(n));
    out += a;
    out += b;
    return Value::from(std::move(out));
}

class Interpreter {
public:
    Interpreter(const Source& source, const Dict& variables, const std::tm& now, const std::function<bool()>& cancelled)
        : budget_(cancelled), src_(source) {
        for (auto& [k, v] : make_globals(now).items) globals_.vars[k.string()] = v;
        for (const auto& [k, v] : variables.items) globals_.vars[to_str(k)] = v;
        root_.parent = &globals_;
    }

    std::string run(const Template& tpl) {
        budget_.poll();  // a render cancelled before it starts does not start
        std::string out;
        Flow f = exec(tpl.body, root_, out);
        if (f != Flow::Normal) throw Error("'break' or 'continue' outside of a loop");
        return out;
    }

private:
    // What the render may still spend (template/budget.h); installed for this thread while
    // the interpreter lives, so the builtins charge it too.
    Budget budget_;
    const Source& src_;
    Scope globals_, root_;
    int call_depth_ = 0;

    void step() { budget_.step(); }
    // out += text, the output limit checked first.
    void write(std::string& out, const std::string& text) {
        if (add_sat(out.size(), text.size()) > limits::kMaxOutputBytes)
            throw Error("template output too large (limit: " + std::to_string(limits::kMaxOutputBytes) + " bytes)");
        budget_.charge(text.size());
        out += text;
    }
    // Every value an expression produces passes here (the operations check sizes before they
    // build a value: this is the last line of defence).
    void check_value(const Value& v) {
        if (v.kind == Kind::String) {
            check_string_size(v.string().size());
        } else if (v.kind == Kind::List) {
            check_list_size(v.list->size());
        }
    }

    // Gives an error thrown below `offset` that position when it has none.
    [[noreturn]] void locate(Error& e, size_t offset) const {
        if (!e.line && !e.positionless()) src_.position(offset, e.line, e.column);
        throw;
    }

    // ---- statements ----

    Flow exec(const Body& body, Scope& scope, std::string& out) {
        for (const auto& s : body) {
            Flow f = Flow::Normal;
            try {
                f = exec(*s, scope, out);
            } catch (Error& e) {
                locate(e, s->offset);
            }
            if (f != Flow::Normal) return f;
        }
        return Flow::Normal;
    }

    Flow exec(const Stmt& s, Scope& scope, std::string& out) {
        budget_.charge(limits::kNodeWork);
        switch (s.kind) {
            case Stmt::K::Text: write(out, s.text); return Flow::Normal;
            case Stmt::K::Print: write(out, to_str(eval(*s.expr, scope))); return Flow::Normal;
            case Stmt::K::If:
                for (size_t i = 0; i < s.conditions.size(); ++i)
                    if (truthy(eval(*s.conditions[i], scope))) return exec(s.bodies[i], scope, out);
                if (s.bodies.size() > s.conditions.size()) return exec(s.bodies.back(), scope, out);
                return Flow::Normal;
            case Stmt::K::For: exec_for(s, scope, out); return Flow::Normal;
            case Stmt::K::Set: assign(s.targets, eval(*s.expr, scope), scope); return Flow::Normal;
            case Stmt::K::SetBlock: {
                Value v = Value::from(capture(s.bodies[0], scope));
                if (s.expr) v = apply_filters(*s.expr, v, scope);
                assign(s.targets, v, scope);
                return Flow::Normal;
            }
            case Stmt::K::Macro: scope.vars[s.text] = make_macro(s, nullptr); return Flow::Normal;
            case Stmt::K::CallBlock: {
                // The called macro gets `caller`, a macro whose body is this block.
                Value caller = make_macro(s, &scope);
                const Expr& call = *s.expr;
                Value callee = eval(*call.args[0], scope);
                Args args = eval_args(call, 1, scope);
                args.keywords.emplace_back("caller", caller);
                write(out, to_str(invoke(callee, args)));
                return Flow::Normal;
            }
            case Stmt::K::FilterBlock:
                write(out, to_str(apply_filters(*s.expr, Value::from(capture(s.bodies[0], scope)), scope)));
                return Flow::Normal;
            case Stmt::K::Break: return Flow::Break;
            case Stmt::K::Continue: return Flow::Continue;
            case Stmt::K::Scope: return exec(s.bodies[0], scope, out);
        }
        return Flow::Normal;
    }

    std::string capture(const Body& body, Scope& scope) {
        std::string text;
        if (exec(body, scope, text) != Flow::Normal) throw Error("'break' or 'continue' outside of a loop");
        return text;
    }

    // Applies a chain of filters whose innermost input is null (block set, filter block).
    Value apply_filters(const Expr& f, const Value& input, Scope& scope) {
        Value v = f.args[0] ? apply_filters(*f.args[0], input, scope) : input;
        return apply_filter(f.name, v, eval_args(f, 1, scope));
    }

    void assign(const std::vector<std::string>& targets, const Value& v, Scope& scope) {
        if (targets.size() == 1) {
            const std::string& t = targets[0];
            size_t dot = t.find('.');
            if (dot == std::string::npos) {
                scope.vars[t] = v;
                return;
            }
            const Value* ns = scope.find(t.substr(0, dot));
            if (!ns || ns->kind != Kind::Namespace) throw Error("cannot assign attribute on non-namespace object");
            ns->dict->set(t.substr(dot + 1), v);
            return;
        }
        List items = iterate(v);
        if (items.size() != targets.size())
            throw Error("cannot unpack " + std::to_string(items.size()) + " values into " +
                        std::to_string(targets.size()) + " names");
        for (size_t i = 0; i < targets.size(); ++i) assign({targets[i]}, items[i], scope);
    }

    void exec_for(const Stmt& s, Scope& scope, std::string& out) {
        Value iterable = eval(*s.expr, scope);
        if (!iterable.is_undefined() && !iterable.is_list() && !iterable.is_dict() && !iterable.is_string())
            throw Error("'" + type_name(iterable) + "' object is not iterable");
        // A list is not copied: lists are immutable, and this one is held while the loop runs.
        std::shared_ptr<const List> all =
            iterable.is_list() ? iterable.list : std::make_shared<const List>(iterate(iterable));
        std::shared_ptr<const List> filtered;
        Scope loop_scope;
        loop_scope.parent = &scope;
        if (s.condition) {  // `for x in xs if cond`: filtered before the loop (loop.* counts these)
            auto kept = std::make_shared<List>();
            for (const auto& item : *all) {
                step();
                assign(s.targets, item, loop_scope);
                if (truthy(eval(*s.condition, loop_scope))) kept->push_back(item);
            }
            loop_scope.vars.clear();
            filtered = std::move(kept);
        }
        const List& items = filtered ? *filtered : *all;
        size_t n = items.size();
        for (size_t i = 0; i < n; ++i) {
            step();
            // Each iteration starts afresh: what the body sets is gone by the next one.
            Scope iteration;
            iteration.parent = &scope;
            assign(s.targets, items[i], iteration);
            iteration.vars["loop"] = loop_object(items, i);
            Flow f = exec(s.bodies[0], iteration, out);
            if (f == Flow::Break) break;
        }
        if (n == 0 && s.bodies.size() > 1) exec(s.bodies[1], loop_scope, out);
    }

    static Value loop_object(const List& items, size_t i) {
        size_t n = items.size();
        Value loop;
        loop.kind = Kind::Namespace;
        loop.dict = std::make_shared<Dict>();
        // The names are made once (their texts are shared) and are distinct: added without
        // Dict::set's search for an existing one.
        enum Name { Index0, Index, Revindex0, Revindex, First, Last, Length, Depth, Depth0, Previtem, Nextitem, Cycle };
        static const Value names[] = {Value::from("index0"), Value::from("index"), Value::from("revindex0"),
                                      Value::from("revindex"), Value::from("first"), Value::from("last"),
                                      Value::from("length"), Value::from("depth"), Value::from("depth0"),
                                      Value::from("previtem"), Value::from("nextitem"), Value::from("cycle")};
        Dict& d = *loop.dict;
        d.items.reserve(std::size(names));
        auto add = [&d](Name name, Value v) { d.items.emplace_back(names[name], std::move(v)); };
        add(Index0, Value::from(int64_t(i)));
        add(Index, Value::from(int64_t(i + 1)));
        add(Revindex0, Value::from(int64_t(n - i - 1)));
        add(Revindex, Value::from(int64_t(n - i)));
        add(First, Value::from(i == 0));
        add(Last, Value::from(i + 1 == n));
        add(Length, Value::from(int64_t(n)));
        add(Depth, Value::from(int64_t(1)));
        add(Depth0, Value::from(int64_t(0)));
        static const Value no_previous = Value::undefined("there is no previous item");
        static const Value no_next = Value::undefined("there is no next item");
        add(Previtem, i > 0 ? items[i - 1] : no_previous);
        add(Nextitem, i + 1 < n ? items[i + 1] : no_next);
        add(Cycle, Value::function("cycle", [i](const Args& a) {
            if (a.positional.empty()) throw Error("no items for cycling given");
            return a.positional[i % a.positional.size()];
        }));
        return loop;
    }

    // A macro (or a call block's `caller` when `caller_scope` is set) as a callable value.
    Value make_macro(const Stmt& s, Scope* caller_scope) {
        Scope* parent = caller_scope ? caller_scope : &root_;
        std::string name = caller_scope ? "caller" : s.text;
        return Value::function(name, [this, &s, parent, name](const Args& a) {
            step();
            if (call_depth_ >= limits::kMaxCallDepth)
                throw Error("macro calls nested too deeply (limit: " + std::to_string(limits::kMaxCallDepth) + ")");
            struct Depth {
                int& d;
                explicit Depth(int& depth) : d(depth) { ++d; }
                ~Depth() { --d; }
            } depth(call_depth_);
            Scope local;
            local.parent = parent;
            if (a.positional.size() > s.params.size())
                throw Error("macro '" + name + "' takes not more than " + std::to_string(s.params.size()) +
                            " argument(s)");
            for (size_t i = 0; i < s.params.size(); ++i) {
                const auto& [pname, def] = s.params[i];
                if (i < a.positional.size()) local.vars[pname] = a.positional[i];
                else if (const Value* kw = a.keyword(pname)) local.vars[pname] = *kw;
                else if (def) local.vars[pname] = eval(*def, local);
                else local.vars[pname] = Value::undefined("parameter '" + pname + "' was not provided");
            }
            Dict extra;
            for (const auto& [k, v] : a.keywords) {
                bool known = k == "caller";
                for (const auto& p : s.params) known = known || p.first == k;
                if (!known) extra.set(k, v);
            }
            if (const Value* c = a.keyword("caller")) local.vars["caller"] = *c;
            local.vars["kwargs"] = Value::from(std::move(extra));
            local.vars["varargs"] = Value::from(List{});
            std::string text;
            if (exec(s.bodies[0], local, text) != Flow::Normal) throw Error("'break' or 'continue' outside of a loop");
            return Value::from(text);  // a plain str: autoescape is off
        });
    }

    // ---- expressions ----

    Args eval_args(const Expr& e, size_t first, Scope& scope) {
        Args a;
        for (size_t i = first; i < e.args.size(); ++i) a.positional.push_back(eval(*e.args[i], scope));
        for (const auto& [k, v] : e.keywords) a.keywords.emplace_back(k, eval(*v, scope));
        return a;
    }

    Value invoke(const Value& callee, const Args& args) {
        if (callee.kind == Kind::Callable) return callee.callable->call(args);
        if (callee.is_undefined()) fail_undefined(callee);
        throw Error("'" + type_name(callee) + "' object is not callable");
    }

    Value eval(const Expr& e, Scope& scope) {
        try {
            budget_.charge(limits::kNodeWork);
            Value v = eval_node(e, scope);
            check_value(v);
            return v;
        } catch (Error& err) {
            locate(err, e.offset);
        }
    }

    Value eval_node(const Expr& e, Scope& scope) {
        switch (e.kind) {
            case Expr::K::Const: return e.value;
            case Expr::K::Name: {
                if (const Value* v = scope.find(e.name)) return *v;
                return Value::undefined("'" + e.name + "' is undefined");
            }
            case Expr::K::List: case Expr::K::Tuple: {
                List l;
                for (const auto& x : e.args) l.push_back(eval(*x, scope));
                Value v = Value::from(std::move(l));
                v.tuple = e.kind == Expr::K::Tuple;
                return v;
            }
            case Expr::K::Dict: {
                Dict d;
                for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
                    Value k = eval(*e.args[i], scope);
                    if (k.is_list() || k.is_dict() || k.is_undefined()) throw Error("unhashable type: '" + type_name(k) + "'");
                    d.set(k, eval(*e.args[i + 1], scope));
                }
                return Value::from(std::move(d));
            }
            case Expr::K::Attr: return get_attr(eval(*e.args[0], scope), e.name);
            case Expr::K::Item: return get_item(eval(*e.args[0], scope), eval(*e.args[1], scope));
            case Expr::K::Slice: {
                auto part = [&](size_t i) { return e.args[i] ? eval(*e.args[i], scope) : Value::none(); };
                return slice(eval(*e.args[0], scope), part(1), part(2), part(3));
            }
            case Expr::K::Call: return invoke(eval(*e.args[0], scope), eval_args(e, 1, scope));
            case Expr::K::Filter: return apply_filter(e.name, eval(*e.args[0], scope), eval_args(e, 1, scope));
            case Expr::K::Test: {
                bool r = apply_test(e.name, eval(*e.args[0], scope), eval_args(e, 1, scope));
                return Value::from(e.negated ? !r : r);
            }
            case Expr::K::Not: return Value::from(!truthy(eval(*e.args[0], scope)));
            case Expr::K::Neg: case Expr::K::Pos: {
                Value v = eval(*e.args[0], scope);
                if (v.is_undefined()) fail_undefined(v);
                if (!v.is_number()) throw Error("bad operand type for unary " + std::string(e.kind == Expr::K::Neg ? "-" : "+") + ": '" + type_name(v) + "'");
                if (e.kind == Expr::K::Pos) return v.kind == Kind::Bool ? Value::from(int64_t(v.boolean)) : v;
                if (v.kind == Kind::Float) return Value::from(-v.real);
                if (v.kind == Kind::Int && v.integer == INT64_MIN) throw Error("integer overflow in unary '-' (integers are 64-bit here)");
                return Value::from(-(v.kind == Kind::Bool ? int64_t(v.boolean) : v.integer));
            }
            case Expr::K::Binary: {
                Value a = eval(*e.args[0], scope), b = eval(*e.args[1], scope);
                if (e.name == "~") return concat(to_str(a), to_str(b));
                return arithmetic(e.name, a, b);
            }
            case Expr::K::And: {
                Value a = eval(*e.args[0], scope);
                return truthy(a) ? eval(*e.args[1], scope) : a;
            }
            case Expr::K::Or: {
                Value a = eval(*e.args[0], scope);
                return truthy(a) ? a : eval(*e.args[1], scope);
            }
            case Expr::K::Compare: {
                Value left = eval(*e.args[0], scope);
                for (size_t i = 0; i < e.ops.size(); ++i) {
                    Value right = eval(*e.args[i + 1], scope);
                    const std::string& op = e.ops[i];
                    bool r;
                    if (op == "==") r = equals(left, right);
                    else if (op == "!=") r = !equals(left, right);
                    else if (op == "in") r = contains(right, left);
                    else if (op == "notin") r = !contains(right, left);
                    else {
                        int c = compare(left, right);
                        r = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
                    }
                    if (!r) return Value::from(false);
                    left = std::move(right);
                }
                return Value::from(true);
            }
            case Expr::K::Cond:
                if (truthy(eval(*e.args[0], scope))) return eval(*e.args[1], scope);
                return e.args[2] ? eval(*e.args[2], scope) : Value::undefined("the inline if-expression evaluated to false and no else section was defined");
        }
        throw Error("unknown expression");
    }
};

}  // namespace

std::string render(const Template& tpl, const Source& source, const Dict& variables, const std::tm& now,
                   const std::function<bool()>& cancelled) {
    return Interpreter(source, variables, now, cancelled).run(tpl);
}

}  // namespace vkllm::jinja
