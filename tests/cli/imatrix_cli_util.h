// What the `vkllm imatrix` end-to-end tests share: a flat importance matrix (every column alike,
// the nearest to none for the types refused without one), a quantized file's weight error as a
// held-out text's own matrix weighs it, and `vkllm perplexity`'s number.
#pragma once

#include <algorithm>
#include <regex>
#include <stdexcept>
#include <string>

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "test_support.h"
#include "vkllm/imatrix.h"

namespace vkllm::test {

// The same entries as m with every column alike, written to a temporary file; returns its path.
inline std::string flat_imatrix_like(const Imatrix& m, const std::string& name) {
    Imatrix flat = m;
    flat.datasets = {"flat"};
    for (ImatrixEntry& e : flat.entries) {
        std::fill(e.sums.begin(), e.sums.end(), 1.0f);
        std::fill(e.counts.begin(), e.counts.end(), 1);
    }
    const std::string path = temp_path(name);
    write_imatrix(flat, path);
    return path;
}

// Over the quantized weights that `held` covers: sum imp_j (W - Q)^2 / sum imp_j W^2, imp the
// held-out text's mean x_j^2: the relative error of W x on held-out activations.
inline double weighted_error(const std::string& original, const std::string& quantized, const Imatrix& held) {
    const auto a = gguf::File::open(original), b = gguf::File::open(quantized);
    double err = 0, norm = 0;
    for (const ImatrixEntry& e : held.entries) {
        const gguf::TensorInfo* q = b->find_tensor(e.name);
        if (!q || q->type == a->find_tensor(e.name)->type) continue;
        const std::vector<float> w = gguf::dequantize_tensor(*a->find_tensor(e.name));
        const std::vector<float> v = gguf::dequantize_tensor(*q);
        const std::vector<float> imp = e.importance();
        for (size_t i = 0; i < w.size(); ++i) {
            const double k = imp[i % imp.size()];
            err += k * double(w[i] - v[i]) * double(w[i] - v[i]);
            norm += k * double(w[i]) * double(w[i]);
        }
    }
    return err / norm;
}

// `vkllm perplexity -m model -f text -c ctx`: the perplexity it prints.
inline double cli_perplexity(const std::string& model, const std::string& text, int ctx) {
    const auto r = shell(vkllm_bin() + " perplexity -m " + model + " -f " + text + " -c " + std::to_string(ctx) +
                         " 2>/dev/null");
    std::smatch m;
    if (r.code != 0 || !std::regex_search(r.out, m, std::regex("perplexity: ([0-9.]+)")))
        throw std::runtime_error("vkllm perplexity failed on " + model + ": " + r.out);
    return std::stod(m[1]);
}

}  // namespace vkllm::test
