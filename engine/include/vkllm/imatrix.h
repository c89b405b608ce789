// Importance matrices, as llama.cpp's llama-imatrix computes them and llama-quantize reads them:
// for each weight matrix W that the forward pass multiplies by an activation x, the sum over the
// tokens of x_j^2 for every input column j (one sum per column and expert for stacked MoE
// experts, over the tokens routed to that expert), and how many tokens were summed. A quantizer
// weighs the error of column j by sum_j / count: columns that see large activations cost more.
//
// Files: llama.cpp's GGUF format (general.type = "imatrix"; imatrix.datasets, imatrix.chunk_count,
// imatrix.chunk_size; per weight `<name>.in_sum2` F32 [n_cols, n_mat] and `<name>.counts` F32
// [1, n_mat]) is read and written; its legacy binary format (`.dat`: per weight the mean times
// the number of chunks) is read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vkllm {

// One weight's sums. n_mat is 1 for a plain matrix and the number of experts for stacked
// experts (ffn_gate_exps, ...): matrix m's sums are sums[m * n_cols .. (m + 1) * n_cols).
struct ImatrixEntry {
    std::string name;             // the weight's tensor name, "blk.0.attn_q.weight"
    int64_t n_cols = 0;           // the weight's row length: the width of its input x
    std::vector<float> sums;      // [n_mat][n_cols]: sum over tokens of x_j^2
    std::vector<int64_t> counts;  // [n_mat]: tokens summed (for an expert: tokens routed to it)

    int64_t n_mat() const { return int64_t(counts.size()); }
    // What a quantizer weighs column j of matrix m by, as llama-quantize computes it: the mean
    // sums[m][j] / counts[m], or 1 for every column of a matrix that saw no token. [n_mat][n_cols].
    std::vector<float> importance() const;
};

struct Imatrix {
    std::vector<ImatrixEntry> entries;  // in name order
    std::vector<std::string> datasets;  // the text files the sums came from
    int32_t chunk_count = 0;            // chunks of text evaluated
    int32_t chunk_size = 0;             // tokens per chunk
    bool legacy = false;                // read from the legacy .dat format (sums are means x chunks)

    // The entry of a weight (nullptr: none).
    const ImatrixEntry* find(const std::string& name) const;
    // Adds x_j^2 of `rows` rows of x ([rows][n_cols], row-major) into matrix `mat` of the entry
    // `name`, made with n_mat matrices if absent. Throws std::invalid_argument when an existing
    // entry has another width or matrix count, or mat is out of range. The CPU form of what the
    // GPU collection does (tests, small tools).
    void accumulate(const std::string& name, const float* x, int64_t rows, int64_t n_cols, int64_t mat = 0,
                    int64_t n_mat = 1);
};

// Reads a GGUF imatrix (llama.cpp's or vkllm's) or a legacy .dat file. Throws std::runtime_error
// naming the file and the problem (unreadable, not an imatrix, a sums tensor without its counts,
// sizes that do not agree, non-finite values).
Imatrix read_imatrix(const std::string& path);
// Writes `m` in llama.cpp's GGUF format (atomically: a temporary file renamed over `path`).
// Throws std::runtime_error on an I/O failure, std::invalid_argument for an entry whose sizes
// do not agree.
void write_imatrix(const Imatrix& m, const std::string& path);

}  // namespace vkllm
