// The golden models of tests/golden/ssm (state-space and hybrid families against llama.cpp):
// loading one with its prompt tokens and llama.cpp's logits of every prompt position, and the
// largest difference of a run's logits from them.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "model/model_internal.h"
#include "test_support.h"
#include "vkllm/model.h"

namespace vkllm::test {

struct SsmGolden {
    std::unique_ptr<Model> model;
    std::vector<int32_t> tokens;
    std::vector<float> logits;  // llama.cpp's [tokens][n_vocab]
    std::vector<int32_t> greedy;  // llama.cpp's 32 greedy tokens after the prompt
    int n_vocab = 0;
};

inline std::string ssm_golden_path(const std::string& name) { return source_dir() + "/tests/golden/ssm/" + name; }

inline SsmGolden load_ssm_golden(const std::string& name) {
    const std::string base = ssm_golden_path(name);
    SsmGolden g;
    g.model = Model::load(base + ".gguf");
    g.tokens = read_ids(base + ".tokens.txt");
    g.logits = read_f32(base + ".logits.f32");
    g.greedy = read_ids(base + ".greedy.txt");
    g.n_vocab = g.model->internals().spec().n_vocab;
    return g;
}

// Largest |logit - llama.cpp's| over positions [from, from + rows) of `logits` (row 0 = position from).
inline double max_diff(const SsmGolden& g, const std::vector<float>& logits, size_t from, size_t rows) {
    double m = 0;
    for (size_t i = 0; i < rows * size_t(g.n_vocab); ++i)
        m = std::max(m, double(std::fabs(logits[i] - g.logits[from * size_t(g.n_vocab) + i])));
    return m;
}

// Any block-quantised tensor: its matmuls read activations rounded to 8 bits.
inline bool quantised(const Model& m) {
    for (const auto& t : m.internals().file().tensors())
        if (t.type != gguf::TensorType::F32 && t.type != gguf::TensorType::F16 && t.type != gguf::TensorType::BF16)
            return true;
    return false;
}

}  // namespace vkllm::test
