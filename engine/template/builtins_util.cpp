#include "template/builtins_util.h"

namespace vkllm::jinja {

[[noreturn]] void type_error(const std::string& message) { throw Error(message); }

Value keep_safe(const Value& from, Value result) {
    if (from.safe && result.is_string()) result.safe = true;
    return result;
}

int64_t as_int(const Value& v, const char* what) {
    if (v.kind == Kind::Int) return v.integer;
    if (v.kind == Kind::Bool) return v.boolean;
    if (v.is_undefined()) fail_undefined(v);
    type_error(std::string(what) + " must be an integer, not " + type_name(v));
}

double as_double(const Value& v) {
    if (v.kind == Kind::Float) return v.real;
    if (v.kind == Kind::Int) return double(v.integer);
    if (v.kind == Kind::Bool) return v.boolean;
    if (v.is_undefined()) fail_undefined(v);
    type_error("unsupported operand type: '" + type_name(v) + "'");
}

const std::string& as_string(const Value& v, const char* what) {
    if (v.is_string()) return v.string;
    if (v.is_undefined()) fail_undefined(v);
    type_error(std::string(what) + " must be str, not " + type_name(v));
}

bool arg_bool(const Args& a, size_t i, const char* name, bool def) {
    const Value* v = a.get(i, name);
    return v ? truthy(*v) : def;
}

Value pairs(const Dict& d) {
    List l;
    for (const auto& [k, v] : d.items) l.push_back(Value::pair(k, v));
    return Value::from(std::move(l));
}

int64_t py_len(const Value& v) {
    switch (v.kind) {
        case Kind::Undefined: return 0;
        case Kind::String: return int64_t(decode_utf8(v.string).size());
        case Kind::List:
            if (v.generator) type_error("object of type 'generator' has no len()");
            return int64_t(v.list->size());
        case Kind::Dict: return int64_t(v.dict->items.size());
        default: type_error("object of type '" + type_name(v) + "' has no len()");
    }
}

}  // namespace vkllm::jinja
