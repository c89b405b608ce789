// Importance matrices, as llama.cpp's llama-imatrix computes them and llama-quantize reads them:
// for each weight matrix W that the forward pass multiplies by an activation x, the sum over the
// tokens of x_j^2 for every input column j (one sum per column and expert for stacked MoE
// experts, over the tokens routed to that expert), and how many tokens were summed. A quantizer
// weighs the error of column j by sum_j / count: columns that see large activations cost more.
//
// Files: llama.cpp's GGUF format (general.type = "imatrix"; imatrix.datasets, imatrix.chunk_count,
// imatrix.chunk_size; per weight `<name>.in_sum2` F32 [n_cols, n_mat] and `<name>.counts` F32
// [1, n_mat]) is read and written; its legacy binary format (`.dat`: per weight the mean times
// the number of chunks) is read and written.
//
// Collection: compute_imatrix evaluates a text as llama-imatrix does and sums every layer
// weight's matmul inputs on the GPU.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vkllm/kv_cache_type.h"

namespace vkllm {

class Model;

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
    // The entry `name`, made with zero sums and counts for n_mat matrices of n_cols if absent.
    // Throws std::invalid_argument when an existing entry has another width or matrix count, or
    // n_cols or n_mat is below 1.
    ImatrixEntry& entry(const std::string& name, int64_t n_cols, int64_t n_mat = 1);
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
// Writes `m` in llama-imatrix's legacy .dat format, as `llama-imatrix --output-format dat` does:
// per entry the mean of each column times ncall = ceil(largest count / chunk_size) (a matrix that
// no token reached: 1 times ncall), entries that no token reached at all left out; then the chunk
// count and the first dataset's name. Atomically, like write_imatrix; the same errors.
void write_imatrix_dat(const Imatrix& m, const std::string& path);

// How compute_imatrix reads a text (llama-imatrix's options of the same meaning).
struct ImatrixOptions {
    int n_ctx = 512;              // tokens per chunk (-c)
    int n_batch = 512;            // tokens per forward pass (-b); a chunk may take several
    int from_chunk = 0;           // chunks skipped at the start of the text (--chunk)
    int max_chunks = -1;          // chunks evaluated at most (--chunks; -1: every whole chunk)
    bool process_output = false;  // output.weight's input too (--process-output)
    bool compute_ppl = true;      // the running perplexity of the chunks' second halves (--no-ppl: off)
    bool llama_cpp_rounding = true;  // activations rounded for quantised weights as llama.cpp's CPU does
    KvCacheType kv_cache = KvCacheType::Auto;  // the KV cache's element type (Auto: F16 where stored)
    std::string dataset;          // recorded in imatrix.datasets (the text file's name)
};

// After each chunk: its index (from 0 among the evaluated), how many will be, seconds since the
// start, and the running perplexity (0 when not computed).
struct ImatrixProgress {
    int chunk = 0, n_chunks = 0;
    double seconds = 0, perplexity = 0;
};

// The importance matrix of `tokens` (a text tokenized with BOS when the vocabulary adds it, as
// llama-imatrix tokenizes it) over `model`: after skipping from_chunk chunks of n_ctx tokens, each
// whole chunk (at most max_chunks) runs alone from an empty cache with its first token replaced by
// BOS (when the vocabulary adds BOS), and every matmul input of 16 rows or more of a layer weight
// (`blk.*`; output.weight with process_output), and every routed expert input, adds its x_j^2 on
// the GPU (per expert over the pairs routed to it). chunk_count and chunk_size are set, datasets
// holds options.dataset when given; DeepSeek's per-head attn_k_b / attn_v_b get one matrix per
// head, as llama-imatrix gives them. Throws std::invalid_argument for n_ctx < 2 or a text of fewer
// than 2 chunks after the skipped ones (llama-imatrix's minimum).
Imatrix compute_imatrix(const Model& model, const std::vector<int32_t>& tokens, const ImatrixOptions& options,
                        const std::function<void(const ImatrixProgress&)>& progress = nullptr);

}  // namespace vkllm
