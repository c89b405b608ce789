// vkllm inspect [FILE.gguf] [--tensors]: what a GGUF file holds (with no file, the model built
// into vkllm), without loading it onto a device.
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "commands.h"
#include "model_file.h"
#include "options.h"
#include "super_report.h"
#include "vkllm/gguf.h"
#include "vkllm/model_info.h"

namespace vkllm::cli {

namespace {

constexpr const char* kUsage =
    "vkllm inspect [FILE.gguf] [--tensors]   (no file: the model built into vkllm)\n"
    "vkllm inspect --check [FILE.gguf]       every tensor decoded and scanned for NaN and infinity\n"
    "                                        (exit 1 when one holds any)\n"
    "vkllm inspect --super [FILE.gguf] [--json]   super weights, massive activations, attention sinks\n"
    "                                             (one forward pass on the GPU; docs/super-weights.md)";

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

uint64_t n_elements(const TensorInfo& t) {
    uint64_t n = 1;
    for (uint64_t d : t.shape) n *= d;
    return n;
}

std::string shape_text(const std::vector<uint64_t>& dims) {
    std::string r = "[";
    for (size_t i = 0; i < dims.size(); ++i) r += (i ? ", " : "") + std::to_string(dims[i]);
    return r + "]";
}

// inspect --check: every tensor's non-finite values; exit 1 when there are any.
int check_file(const std::string& path) {
    auto file = open_model_file(path);
    const TensorCheckReport r = check_tensors(*file);
    for (const NonFiniteTensor& t : r.non_finite)
        std::printf("%s (%s): %" PRIu64 " NaN, %" PRIu64 " infinite; first at element %" PRIu64 "\n", t.name.c_str(),
                    t.type.c_str(), t.n_nan, t.n_inf, t.first_index);
    for (const std::string& s : r.skipped) std::printf("not checked: %s, a type the CPU cannot decode\n", s.c_str());
    std::printf("%s: %" PRIu64 " tensors (%" PRIu64 " values) checked, %zu with NaN or infinite values\n",
                file->path().c_str(), r.tensors_checked, r.elements_checked, r.non_finite.size());
    return r.non_finite.empty() ? 0 : 1;
}

int inspect(const Args& args) {
    std::string path;
    bool list_tensors = false, super = false, json = false, check = false;
    for (const std::string& a : args) {
        if (a == "--tensors") list_tensors = true;
        else if (a == "--super") super = true;
        else if (a == "--json") json = true;
        else if (a == "--check") check = true;
        else if (a == "-h" || a == "--help") throw HelpRequested();
        else if (a.empty()) throw UsageError("an empty file name");
        else if (a[0] == '-') throw UsageError("unknown option '" + a + "'");
        else if (path.empty()) path = a;
        else throw UsageError("more than one file given ('" + path + "', '" + a + "')");
    }
    if (json && !super) throw UsageError("--json goes with --super");
    if (check && (super || list_tensors)) throw UsageError("--check goes alone");
    if (check) return check_file(path);
    if (super) {
        if (list_tensors) throw UsageError("--tensors and --super do not go together");
        return inspect_super(path, json);
    }
    auto file = open_model_file(path);
    const GgufValue* arch_value = file->find("general.architecture");
    const std::string arch = arch_value && arch_value->string ? *arch_value->string : "";
    std::set<std::string> shown = {"general.architecture", "general.name"};

    std::printf("file:          %s (%s)\n", file->path().c_str(), human_bytes(file->file_size()).c_str());
    std::printf("GGUF version:  %u, alignment %" PRIu64 "\n", file->version(), file->alignment());
    std::printf("architecture:  %s\n", arch.empty() ? "(not set)" : arch.c_str());
    if (const GgufValue* name = file->find("general.name"); name && name->string)
        std::printf("name:          %s\n", name->string->c_str());

    // Hyperparameters: every "<arch>." key, in file order.
    if (!arch.empty()) {
        std::printf("hyperparameters:\n");
        const std::string prefix = arch + ".";
        int n = 0;
        for (const GgufValue& v : file->metadata()) {
            if (v.key.rfind(prefix, 0) != 0) continue;
            std::printf("  %-40s %s\n", v.key.substr(prefix.size()).c_str(), v.text.c_str());
            shown.insert(v.key);
            ++n;
        }
        if (n == 0) std::printf("  (none)\n");
    }

    // Tokenizer.
    const GgufValue* tokens = file->find("tokenizer.ggml.tokens");
    if (file->find("tokenizer.ggml.model") || tokens) {
        const GgufValue* model = file->find("tokenizer.ggml.model");
        const GgufValue* pre = file->find("tokenizer.ggml.pre");
        const GgufValue* merges = file->find("tokenizer.ggml.merges");
        std::printf("tokenizer:     model %s, pre %s, vocab %zu", model ? model->text.c_str() : "(not set)",
                    pre ? pre->text.c_str() : "(not set)",
                    tokens && tokens->type == "array" ? size_t(tokens->n_elements) : size_t(0));
        if (merges && merges->type == "array") std::printf(", %zu merges", size_t(merges->n_elements));
        std::printf("\n");
        for (const char* special : {"bos", "eos", "unknown", "padding"}) {
            const std::string key = std::string("tokenizer.ggml.") + special + "_token_id";
            if (const GgufValue* id = file->find(key)) {
                std::string text;
                if (id->integer && id->type != "bool" && tokens && tokens->elem_type == "string" && *id->integer >= 0 &&
                    uint64_t(*id->integer) < tokens->strings.size())
                    text = " " + quoted_one_line(tokens->strings[size_t(*id->integer)], 24);
                std::printf("  %-8s %s%s\n", special, id->text.c_str(), text.c_str());
                shown.insert(key);
            }
        }
        for (const char* k : {"tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.merges"})
            shown.insert(k);
    }

    // Tensors by type.
    std::map<std::string, std::pair<size_t, uint64_t>> by_type;  // name -> (count, bytes)
    uint64_t total_bytes = 0, total_params = 0;
    bool has_embeddings = false;
    for (const TensorInfo& t : file->tensors()) {
        auto& slot = by_type[t.type];
        slot.first++;
        slot.second += t.bytes;
        total_bytes += t.bytes;
        total_params += n_elements(t);
        has_embeddings |= t.name == "token_embd.weight";
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
    for (const GgufValue& v : file->metadata()) {
        if (shown.count(v.key)) continue;
        std::printf("  %-42s %s\n", v.key.c_str(), v.text.c_str());
    }

    // The architecture as the engine reads it: one row per layer.
    if (has_embeddings) {
        try {
            std::printf("architecture as vkllm runs it:\n%s", read_model_info(*file).layer_table().c_str());
        } catch (const std::exception& e) {  // an unsupported architecture or vocabulary, a missing key
            std::printf("architecture as vkllm runs it: not runnable: %s\n", e.what());
        }
    }

    if (list_tensors) {
        std::printf("tensor list:\n");
        std::printf("  %-40s %-7s %-22s %12s\n", "name", "type", "shape", "bytes");
        for (const TensorInfo& t : file->tensors())
            std::printf("  %-40s %-7s %-22s %12" PRIu64 "\n", t.name.c_str(), t.type.c_str(), shape_text(t.shape).c_str(),
                        t.bytes);
    }
    return 0;
}

}  // namespace

int cmd_inspect(const Args& args) { return with_usage(kUsage, inspect, args); }

}  // namespace vkllm::cli
