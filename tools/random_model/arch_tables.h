// Architectures as data: which tensors a family has (llama.cpp names, shapes in symbolic sizes,
// how each is initialised) and the metadata it adds to the common set. Adding a family means
// adding a table in arch_tables.cpp, not code.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf.h"

namespace vkllm::random_model {

// Symbolic tensor sizes, resolved from the configuration.
enum class Dim {
    Embd,      // n_embd
    Vocab,     // n_vocab (from the vocabulary file)
    Ff,        // n_ff
    QProj,     // n_head * head_dim
    KvProj,    // n_head_kv * head_dim
    HeadDim,   // head_dim
    RopeHalf,  // rotated dims / 2 (one factor per frequency)
};

enum class Init {
    Embedding,  // normal, std 1/sqrt(n_embd): each embedding has norm about 1, tied logits std about 1
    Matrix,     // normal, std 1/sqrt(dims[0]): keeps the output variance of a projection at its input's
    Norm,       // 1 + normal(0, 0.1): norm weights near 1 (llama.cpp stores Gemma's already shifted by 1)
    Bias,       // normal(0, 0.1)
    RopeFreqs,  // Llama 3 per-frequency divisors, computed from the rope scaling (not random)
};

enum class Presence {
    Always,
    Untied,      // only when the output projection is not tied to token_embd
    Llama3Rope,  // only with llama3 rope scaling
};

struct TensorRule {
    std::string name;       // per-layer rules: "{L}" stands for the layer index
    std::vector<Dim> dims;  // ggml order: dims[0] is the row length (a matrix's input size)
    Init init = Init::Matrix;
    Presence presence = Presence::Always;
};

struct ArchTable {
    std::string name;                     // general.architecture
    std::vector<TensorRule> globals;      // written before the layers
    std::vector<TensorRule> per_layer;    // written for each layer
    float norm_eps = 1e-5f;
    float rope_freq_base = 10000.0f;
    bool head_dim_free = true;            // false: llama.cpp requires n_head * head_dim == n_embd
    bool always_write_head_dims = false;  // key_length/value_length even when head_dim == n_embd/n_head
    bool always_tied = false;             // llama.cpp never reads an output.weight for this family
    int default_sliding_window = 0;       // > 0: the family has sliding-window layers
    // Metadata beyond the common set: (key without the "<arch>." prefix, value).
    std::vector<std::pair<std::string, gguf::Value>> extra_metadata;

    bool has_presence(Presence p) const;
};

const ArchTable* find_arch_table(const std::string& arch);
const std::vector<ArchTable>& arch_tables();

}  // namespace vkllm::random_model
