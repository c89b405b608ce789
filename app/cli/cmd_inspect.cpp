// vkllm inspect [FILE.gguf] [--tensors]: what a GGUF file holds (with no file, the model built
// into vkllm), without loading it onto a device.
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "commands.h"
#include "model/spec.h"
#include "gguf/gguf.h"
#include "model_file.h"
#include "options.h"

namespace vkllm::cli {

namespace {

using gguf::Value;
using gguf::ValueType;

constexpr const char* kUsage = "vkllm inspect [FILE.gguf] [--tensors]   (no file: the model built into vkllm)";

std::string human_bytes(uint64_t n) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = double(n);
    int u = 0;
    while (v >= 1024.0 && u < 4) v /= 1024.0, ++u;
    char buf[32];
    std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", v, units[u]);
    return buf;
}

std::string human_count(uint64_t n) {
    const char* units[] = {"", "K", "M", "B", "T"};
    double v = double(n);
    int u = 0;
    while (v >= 1000.0 && u < 4) v /= 1000.0, ++u;
    char buf[32];
    std::snprintf(buf, sizeof buf, u ? "%.2f%s" : "%.0f%s", v, units[u]);
    return buf;
}

// A string shown on one line: control characters escaped, long text cut with its length noted.
std::string one_line(const std::string& s, size_t max_chars = 72) {
    std::string r = "\"";
    for (size_t i = 0; i < s.size() && i < max_chars; ++i) {
        char c = s[i];
        if (c == '\n') r += "\\n";
        else if (c == '\t') r += "\\t";
        else if (static_cast<unsigned char>(c) < 0x20) r += '?';
        else r += c;
    }
    r += "\"";
    if (s.size() > max_chars) r += " ... (" + std::to_string(s.size()) + " chars)";
    return r;
}

std::string scalar_text(const Value& v) {
    char buf[64];
    switch (v.type) {
        case ValueType::STRING: return one_line(v.s);
        case ValueType::BOOL: return v.u ? "true" : "false";
        case ValueType::FLOAT32:
        case ValueType::FLOAT64: std::snprintf(buf, sizeof buf, "%g", v.f); return buf;
        case ValueType::INT8: case ValueType::INT16: case ValueType::INT32: case ValueType::INT64:
            return std::to_string(v.i);
        default: return std::to_string(v.u);
    }
}

// Scalars in full; short numeric arrays inline; anything longer as "[type x N]" with a preview.
std::string value_text(const Value& v) {
    if (v.type != ValueType::ARRAY) return scalar_text(v);
    std::string kind = std::string("[") + gguf::value_type_name(v.elem_type) + " x " + std::to_string(v.arr.size()) + "]";
    if (v.elem_type == ValueType::ARRAY) return kind;
    const size_t preview = v.elem_type == ValueType::STRING ? 3 : 8;
    if (v.arr.size() <= preview && v.elem_type != ValueType::STRING) {
        std::string r = "[";
        for (size_t i = 0; i < v.arr.size(); ++i) r += (i ? ", " : "") + scalar_text(v.arr[i]);
        return r + "]";
    }
    std::string r = kind + " ";
    for (size_t i = 0; i < v.arr.size() && i < preview; ++i)
        r += (i ? ", " : "") + (v.elem_type == ValueType::STRING ? one_line(v.arr[i].s, 24) : scalar_text(v.arr[i]));
    if (v.arr.size() > preview) r += ", ...";
    return r;
}

std::string shape_text(const std::vector<uint64_t>& dims) {
    std::string r = "[";
    for (size_t i = 0; i < dims.size(); ++i) r += (i ? ", " : "") + std::to_string(dims[i]);
    return r + "]";
}

int inspect(const Args& args) {
    std::string path;
    bool list_tensors = false;
    for (const std::string& a : args) {
        if (a == "--tensors") list_tensors = true;
        else if (a == "-h" || a == "--help") throw HelpRequested();
        else if (a.empty()) throw UsageError("an empty file name");
        else if (a[0] == '-') throw UsageError("unknown option '" + a + "'");
        else if (path.empty()) path = a;
        else throw UsageError("more than one file given ('" + path + "', '" + a + "')");
    }
    auto file = open_model_file(path);
    const std::string arch = file->get_string("general.architecture").value_or("");
    std::set<std::string> shown = {"general.architecture", "general.name"};

    std::printf("file:          %s (%s)\n", file->path().c_str(), human_bytes(file->file_size()).c_str());
    std::printf("GGUF version:  %u, alignment %" PRIu64 "\n", file->version(), file->alignment());
    std::printf("architecture:  %s\n", arch.empty() ? "(not set)" : arch.c_str());
    if (auto name = file->get_string("general.name")) std::printf("name:          %s\n", name->c_str());

    // Hyperparameters: every "<arch>." key, in file order.
    if (!arch.empty()) {
        std::printf("hyperparameters:\n");
        const std::string prefix = arch + ".";
        int n = 0;
        for (const std::string& key : file->keys_in_order()) {
            if (key.rfind(prefix, 0) != 0) continue;
            std::printf("  %-40s %s\n", key.substr(prefix.size()).c_str(), value_text(*file->find(key)).c_str());
            shown.insert(key);
            ++n;
        }
        if (n == 0) std::printf("  (none)\n");
    }

    // Tokenizer.
    if (file->has("tokenizer.ggml.model") || file->has("tokenizer.ggml.tokens")) {
        std::string model = file->has("tokenizer.ggml.model") ? scalar_text(*file->find("tokenizer.ggml.model")) : "(not set)";
        std::string pre = file->has("tokenizer.ggml.pre") ? scalar_text(*file->find("tokenizer.ggml.pre")) : "(not set)";
        const Value* tokens = file->find("tokenizer.ggml.tokens");
        const Value* merges = file->find("tokenizer.ggml.merges");
        std::printf("tokenizer:     model %s, pre %s, vocab %zu", model.c_str(), pre.c_str(),
                    tokens && tokens->type == ValueType::ARRAY ? tokens->arr.size() : size_t(0));
        if (merges && merges->type == ValueType::ARRAY) std::printf(", %zu merges", merges->arr.size());
        std::printf("\n");
        for (const char* special : {"bos", "eos", "unknown", "padding"}) {
            const std::string key = std::string("tokenizer.ggml.") + special + "_token_id";
            if (const Value* id = file->find(key)) {
                std::string text;
                if (id->is_integer() && tokens && tokens->type == ValueType::ARRAY && id->u < tokens->arr.size() &&
                    tokens->elem_type == ValueType::STRING)
                    text = " " + one_line(tokens->arr[id->u].s, 24);
                std::printf("  %-8s %s%s\n", special, scalar_text(*id).c_str(), text.c_str());
                shown.insert(key);
            }
        }
        for (const char* k : {"tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.merges"})
            shown.insert(k);
    }

    // Tensors by type.
    std::map<std::string, std::pair<size_t, uint64_t>> by_type;  // name -> (count, bytes)
    uint64_t total_bytes = 0, total_params = 0;
    for (const auto& t : file->tensors()) {
        auto tr = gguf::type_traits(t.type);
        auto& slot = by_type[tr ? tr->name : "?"];
        slot.first++;
        slot.second += t.n_bytes;
        total_bytes += t.n_bytes;
        total_params += t.n_elements();
    }
    std::printf("tensors:       %zu (", file->tensors().size());
    bool first = true;
    for (const auto& [type, cb] : by_type) {
        std::printf("%s%s: %zu, %s", first ? "" : "; ", type.c_str(), cb.first, human_bytes(cb.second).c_str());
        first = false;
    }
    std::printf(")\n");
    std::printf("tensor bytes:  %" PRIu64 " (%s)\n", total_bytes, human_bytes(total_bytes).c_str());
    std::printf("parameters:    %" PRIu64 " (%s)\n", total_params, human_count(total_params).c_str());

    std::printf("other metadata:\n");
    for (const std::string& key : file->keys_in_order()) {
        if (shown.count(key)) continue;
        std::printf("  %-42s %s\n", key.c_str(), value_text(*file->find(key)).c_str());
    }

    // The architecture as the engine reads it: one row per layer.
    if (file->find_tensor("token_embd.weight")) {
        try {
            std::printf("architecture as vkllm runs it:\n%s", model::ModelSpec::from_gguf(*file).to_table().c_str());
        } catch (const std::exception& e) {  // ModelError, or a FormatError in a key it reads
            std::printf("architecture as vkllm runs it: not runnable: %s\n", e.what());
        }
    }

    if (list_tensors) {
        std::printf("tensor list:\n");
        std::printf("  %-40s %-7s %-22s %12s\n", "name", "type", "shape", "bytes");
        for (const auto& t : file->tensors()) {
            auto tr = gguf::type_traits(t.type);
            std::printf("  %-40s %-7s %-22s %12" PRIu64 "\n", t.name.c_str(), tr ? tr->name : "?",
                        shape_text(t.dims).c_str(), t.n_bytes);
        }
    }
    return 0;
}

}  // namespace

int cmd_inspect(const Args& args) { return with_usage(kUsage, inspect, args); }

}  // namespace vkllm::cli
