#include "model_facts.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "vkllm/gguf.h"

namespace vkllm::studio {

std::string count_text(uint64_t n) {
    char b[32];
    if (n >= 1000000000ull) snprintf(b, sizeof b, "%.2f B", double(n) / 1e9);
    else if (n >= 1000000ull) snprintf(b, sizeof b, "%.2f M", double(n) / 1e6);
    else if (n >= 1000ull) snprintf(b, sizeof b, "%.1f K", double(n) / 1e3);
    else snprintf(b, sizeof b, "%llu", static_cast<unsigned long long>(n));
    return b;
}

std::string bytes_text(uint64_t n) {
    char b[32];
    if (n >= (1ull << 30)) snprintf(b, sizeof b, "%.2f GiB", double(n) / double(1ull << 30));
    else if (n >= (1ull << 20)) snprintf(b, sizeof b, "%.2f MiB", double(n) / double(1ull << 20));
    else if (n >= (1ull << 10)) snprintf(b, sizeof b, "%.1f KiB", double(n) / double(1ull << 10));
    else snprintf(b, sizeof b, "%llu B", static_cast<unsigned long long>(n));
    return b;
}

std::vector<ModelFact> model_facts(const ModelInfo& info, uint64_t file_bytes) {
    std::vector<ModelFact> f;
    f.push_back({"architecture", info.arch});
    if (!info.name.empty()) f.push_back({"name", info.name});
    f.push_back({"parameters", count_text(info.parameters)});
    // Quantisation: each tensor type's share of the tensor bytes, largest first.
    std::map<std::string, uint64_t> by_type;
    uint64_t total = 0;
    for (const TensorInfo& t : info.tensors) {
        by_type[t.type] += t.bytes;
        total += t.bytes;
    }
    std::vector<std::pair<std::string, uint64_t>> types(by_type.begin(), by_type.end());
    std::stable_sort(types.begin(), types.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string quant;
    for (const auto& [type, bytes] : types) {
        char share[48];
        snprintf(share, sizeof share, "%s%s %.0f%%", quant.empty() ? "" : ", ", type.c_str(),
                 total ? 100.0 * double(bytes) / double(total) : 0.0);
        quant += share;
    }
    f.push_back({"quantisation", quant.empty() ? "no tensors" : quant});
    f.push_back({"context", info.n_ctx_train > 0 ? std::to_string(info.n_ctx_train) + " tokens (training)" : "not given"});
    f.push_back({"layers", std::to_string(info.n_layer) + ", width " + std::to_string(info.n_embd) + ", vocabulary " +
                               std::to_string(info.n_vocab)});
    f.push_back({"chat template", info.chat_template.empty() ? "none (plain continuation)" : "present"});
    f.push_back({"tokenizer", info.tokenizer});
    if (file_bytes > 0) f.push_back({"file", bytes_text(file_bytes)});
    return f;
}

std::vector<ModelFact> read_model_facts(const std::string& path) {
    const std::unique_ptr<GgufFile> file = GgufFile::open(path);
    return model_facts(read_model_info(*file), file->file_size());
}

}  // namespace vkllm::studio
