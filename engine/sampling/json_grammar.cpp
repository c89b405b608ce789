// JsonGrammarNodes: building the node graph from a JSON Schema (the subset json_grammar.h lists).
#include "sampling/json_grammar.h"

#include <map>
#include <set>

#include <nlohmann/json.hpp>

namespace vkllm::sampling {
namespace {

using json = nlohmann::json;

// The nodes every grammar starts with (JsonGrammarNodes::kAny ...).
std::vector<JsonNode> base_nodes() {
    std::vector<JsonNode> n(6);
    n[JsonGrammarNodes::kAny].kind = JsonNode::Kind::Any;
    n[JsonGrammarNodes::kAnyObject].kind = JsonNode::Kind::Object;
    n[JsonGrammarNodes::kAnyObject].additional = JsonGrammarNodes::kAny;
    n[JsonGrammarNodes::kAnyArray].kind = JsonNode::Kind::Array;
    n[JsonGrammarNodes::kAnyArray].items = JsonGrammarNodes::kAny;
    n[JsonGrammarNodes::kAnyString].kind = JsonNode::Kind::String;
    n[JsonGrammarNodes::kAnyNumber].kind = JsonNode::Kind::Number;
    n[JsonGrammarNodes::kAnyLiteral].kind = JsonNode::Kind::Literals;
    n[JsonGrammarNodes::kAnyLiteral].literals = {"true", "false", "null"};
    return n;
}

// Text between the quotes of a JSON string holding `s`.
std::string quoted_inside(const std::string& s) {
    const std::string q = json(s).dump();
    return q.substr(1, q.size() - 2);
}

const std::set<std::string> kAnnotations = {"title",   "description", "default", "examples",   "$schema",
                                            "$id",     "$comment",    "$defs",   "definitions", "format",
                                            "deprecated", "readOnly", "writeOnly"};
const std::set<std::string> kKeywords = {"type",      "properties", "required",  "additionalProperties",
                                         "items",     "minItems",   "maxItems",  "minLength",
                                         "maxLength", "enum",       "const",     "anyOf",
                                         "oneOf",     "allOf",      "$ref"};

class Compiler {
public:
    explicit Compiler(const json& root) : root_(root) { g_.nodes = base_nodes(); }

    JsonGrammarNodes run() {
        // The root is compiled through its $ref entry so that "#" refers back to it.
        g_.root = ref("#");
        return std::move(g_);
    }

private:
    [[noreturn]] static void refuse(const std::string& keyword, const std::string& path, const std::string& why) {
        throw JsonSchemaError("the schema's '" + keyword + "' at " + path + " " + why, keyword);
    }

    int add(JsonNode n) {
        g_.nodes.push_back(std::move(n));
        return int(g_.nodes.size()) - 1;
    }

    // A local reference: "#", "#/$defs/NAME" or "#/definitions/NAME". Each is compiled once,
    // into a node reserved before its body, so recursive schemas refer back to it.
    int ref(const std::string& target) {
        if (auto it = refs_.find(target); it != refs_.end()) return it->second;
        const json* s = &root_;
        if (target != "#") {
            static const std::pair<const char*, const char*> kDirs[] = {{"#/$defs/", "$defs"},
                                                                        {"#/definitions/", "definitions"}};
            bool found = false;
            for (const auto& [dir, key] : kDirs) {
                if (target.rfind(dir, 0) != 0) continue;
                const std::string name = target.substr(std::string(dir).size());
                if (!root_.contains(key) || !root_[key].is_object() || !root_[key].contains(name))
                    refuse("$ref", target, "points to no definition");
                s = &root_[key][name];
                found = true;
            }
            if (!found) refuse("$ref", target, "is not a local reference (#, #/$defs/NAME or #/definitions/NAME)");
        }
        const int slot = add(JsonNode{});
        refs_[target] = slot;
        const int body = compile(*s, target);
        // The reserved node becomes an alternative of one: the body itself.
        g_.nodes[size_t(slot)].kind = JsonNode::Kind::AnyOf;
        g_.nodes[size_t(slot)].options = {body};
        return slot;
    }

    static int read_count(const json& s, const char* key, const std::string& path, int fallback) {
        if (!s.contains(key)) return fallback;
        const json& v = s[key];
        if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (1 << 30))
            refuse(key, path, "must be a non-negative integer");
        return int(v.get<int64_t>());
    }

    int compile(const json& s, const std::string& path) {
        if (s.is_boolean()) {
            if (s.get<bool>()) return JsonGrammarNodes::kAny;
            refuse("false", path, "allows no value");
        }
        if (!s.is_object()) throw JsonSchemaError("the schema at " + path + " must be an object", "");
        if (++depth_ > 64) refuse("$ref", path, "nests schemas more than 64 deep");
        struct Leave {
            int& d;
            ~Leave() { --d; }
        } leave{depth_};
        for (auto it = s.begin(); it != s.end(); ++it)
            if (!kKeywords.count(it.key()) && !kAnnotations.count(it.key()))
                refuse(it.key(), path, "is not supported (supported: " + supported() + ")");

        if (s.contains("$ref")) {
            if (!s["$ref"].is_string()) refuse("$ref", path, "must be a string");
            return ref(s["$ref"].get<std::string>());
        }
        if (s.contains("const")) return literals(json::array({s["const"]}));
        if (s.contains("enum")) {
            if (!s["enum"].is_array() || s["enum"].empty()) refuse("enum", path, "must be a non-empty list");
            return literals(s["enum"]);
        }
        for (const char* key : {"anyOf", "oneOf", "allOf"}) {
            if (!s.contains(key)) continue;
            const json& list = s[key];
            if (!list.is_array() || list.empty()) refuse(key, path, "must be a non-empty list of schemas");
            if (std::string(key) == "allOf") {
                if (list.size() != 1) refuse(key, path, "of more than one schema is not supported");
                return compile(list[0], path + "/allOf/0");
            }
            JsonNode n;
            n.kind = JsonNode::Kind::AnyOf;
            for (size_t i = 0; i < list.size(); ++i)
                n.options.push_back(compile(list[i], path + "/" + key + "/" + std::to_string(i)));
            return add(std::move(n));
        }
        if (!s.contains("type")) {
            if (s.contains("properties") || s.contains("required") || s.contains("additionalProperties"))
                return typed(s, "object", path);
            if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) return typed(s, "array", path);
            if (s.contains("minLength") || s.contains("maxLength")) return typed(s, "string", path);
            return JsonGrammarNodes::kAny;
        }
        const json& type = s["type"];
        if (type.is_string()) return typed(s, type.get<std::string>(), path);
        if (!type.is_array() || type.empty()) refuse("type", path, "must be a type name or a non-empty list of them");
        JsonNode n;
        n.kind = JsonNode::Kind::AnyOf;
        for (const json& t : type) {
            if (!t.is_string()) refuse("type", path, "must list type names");
            n.options.push_back(typed(s, t.get<std::string>(), path));
        }
        return add(std::move(n));
    }

    int literals(const json& values) {
        JsonNode n;
        n.kind = JsonNode::Kind::Literals;
        for (const json& v : values) n.literals.push_back(v.dump());
        return add(std::move(n));
    }

    int typed(const json& s, const std::string& type, const std::string& path) {
        JsonNode n;
        if (type == "object") {
            n.kind = JsonNode::Kind::Object;
            std::map<std::string, int> index;
            if (s.contains("properties")) {
                const json& props = s["properties"];
                if (!props.is_object()) refuse("properties", path, "must be an object of schemas");
                if (props.size() > size_t(kMaxProperties))
                    refuse("properties", path, "has more than " + std::to_string(kMaxProperties) + " properties");
                for (auto it = props.begin(); it != props.end(); ++it) {
                    index[it.key()] = int(n.names.size());
                    n.names.push_back(quoted_inside(it.key()));
                    n.values.push_back(compile(it.value(), path + "/properties/" + it.key()));
                }
            }
            if (s.contains("required")) {
                if (!s["required"].is_array()) refuse("required", path, "must be a list of property names");
                for (const json& r : s["required"]) {
                    if (!r.is_string() || !index.count(r.get<std::string>()))
                        refuse("required", path, "names " + r.dump() + ", which 'properties' does not define");
                    n.required |= uint64_t(1) << index[r.get<std::string>()];
                }
            }
            n.additional = JsonGrammarNodes::kAny;
            if (s.contains("additionalProperties")) {
                const json& a = s["additionalProperties"];
                n.additional = a.is_boolean() && !a.get<bool>() ? -1 : compile(a, path + "/additionalProperties");
            }
        } else if (type == "array") {
            n.kind = JsonNode::Kind::Array;
            n.items = JsonGrammarNodes::kAny;
            if (s.contains("items")) {
                if (s["items"].is_array()) refuse("items", path, "as a list (tuple validation) is not supported");
                n.items = compile(s["items"], path + "/items");
            }
            n.min_items = read_count(s, "minItems", path, 0);
            n.max_items = read_count(s, "maxItems", path, -1);
            if (n.max_items >= 0 && n.max_items < n.min_items) refuse("maxItems", path, "is below minItems");
        } else if (type == "string") {
            n.kind = JsonNode::Kind::String;
            n.min_length = read_count(s, "minLength", path, 0);
            n.max_length = read_count(s, "maxLength", path, -1);
            if (n.max_length >= 0 && n.max_length < n.min_length) refuse("maxLength", path, "is below minLength");
        } else if (type == "number") {
            n.kind = JsonNode::Kind::Number;
        } else if (type == "integer") {
            n.kind = JsonNode::Kind::Integer;
        } else if (type == "boolean") {
            n.kind = JsonNode::Kind::Literals;
            n.literals = {"true", "false"};
        } else if (type == "null") {
            n.kind = JsonNode::Kind::Literals;
            n.literals = {"null"};
        } else {
            refuse("type", path, "names '" + type + "', not a JSON Schema type");
        }
        return add(std::move(n));
    }

    static std::string supported() {
        std::string out;
        for (const std::string& k : kKeywords) out += (out.empty() ? "" : ", ") + k;
        return out;
    }

    const json& root_;
    JsonGrammarNodes g_;
    std::map<std::string, int> refs_;
    int depth_ = 0;
};

}  // namespace

JsonGrammarNodes JsonGrammarNodes::any_object() {
    JsonGrammarNodes g;
    g.nodes = base_nodes();
    g.root = kAnyObject;
    return g;
}

JsonGrammarNodes JsonGrammarNodes::from_schema(const std::string& schema) {
    json s;
    try {
        s = json::parse(schema);
    } catch (const json::exception& e) {
        throw JsonSchemaError(std::string("the schema is not valid JSON: ") + e.what(), "");
    }
    return Compiler(s).run();
}

}  // namespace vkllm::sampling
