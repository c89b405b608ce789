// File-level access to GGUF files for tools (vkllm inspect, vkllm quantize): metadata, tensor
// list and rewriting weights in another type. Running a model goes through Model instead.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vkllm/model_info.h"

namespace vkllm {

namespace gguf { class File; }  // the engine's reader; not part of the API

// One metadata key.
struct GgufValue {
    std::string key;
    std::string type;        // "u8".."i64", "f32", "f64", "bool", "string", "array"
    std::string elem_type;   // arrays: the element type; empty otherwise
    uint64_t n_elements = 1; // arrays: the length
    std::optional<int64_t> integer;    // integer and bool scalars
    std::optional<double> real;        // float scalars
    std::optional<std::string> string; // string scalars
    std::vector<std::string> strings;  // string arrays, in full
    std::vector<double> numbers;       // numeric arrays, in full
    // One line for a person: scalars in full (strings quoted, control characters escaped, long
    // text cut with its length noted), arrays as "[type x N] first, ...".
    std::string text;
};

// A string as GgufValue::text shows it: quoted on one line, control characters escaped, text
// past `max_chars` cut with its length noted.
std::string quoted_one_line(const std::string& s, size_t max_chars = 72);

// A GGUF file opened for reading (memory-mapped; nothing goes to a GPU).
class GgufFile {
public:
    // Throws std::runtime_error naming the file and what is wrong with it.
    static std::unique_ptr<GgufFile> open(const std::string& path);
    // A GGUF image in memory; `name` is what messages call it. The bytes are copied.
    static std::unique_ptr<GgufFile> from_memory(const void* data, size_t size, const std::string& name);
    ~GgufFile();

    const std::string& path() const;    // the path, or the name given to from_memory
    uint64_t file_size() const;
    uint32_t version() const;
    uint64_t alignment() const;
    const std::vector<GgufValue>& metadata() const;  // in file order
    const GgufValue* find(const std::string& key) const;
    const std::vector<TensorInfo>& tensors() const;  // in file order

    // The engine's reader (for Model::load); not for front-ends.
    std::unique_ptr<gguf::File> release_internal();
    const gguf::File& internal() const;

private:
    GgufFile();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Tensor types `quantize` can write: "F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0",
// "Q5_1", "Q2_K".."Q6_K" (whatever the engine encodes).
std::vector<std::string> quantize_types();

struct QuantizedTensor {
    std::string name;
    std::string from, to;  // type names
    std::string note;      // why it kept its type or fell back; empty for a plain conversion
};

struct QuantizeReport {
    std::vector<QuantizedTensor> tensors;
    uint64_t bytes_in = 0, bytes_out = 0;
};

// Rewrites `in`'s weights in `type` (llama-quantize's policy without its per-model mixes) and
// writes the result to `out_path`: to a temporary file in the same folder, renamed over the
// target only when every write and the close succeeded (a failure leaves `out_path` as it was).
// Throws std::invalid_argument for an unknown type, std::runtime_error for a write failure.
QuantizeReport quantize_file(const GgufFile& in, const std::string& out_path, const std::string& type);

// llama-quantize's file types by name, for `vkllm quantize`: "Q4_K_M", "Q3_K_S", "IQ4_XS", ...
// and the plain types ("Q8_0", "F16"). Each gives every tensor the type llama.cpp's
// llama-quantize gives it (its per-tensor rules: output and value projections in more bits,
// the first and last layers' ffn_down in more bits, fallbacks for rows the block does not
// divide, ...). Some need types vkllm cannot write yet (the i-quants): quantize_mix refuses them.
std::vector<std::string> quantize_mix_names();

struct QuantizeMixOptions {
    bool pure = false;     // every quantized weight in the mix's base type (llama-quantize --pure)
    bool dry_run = false;  // only choose the types: nothing is read beyond the header or written
    // Called after each tensor is written: tensors done, tensors in all.
    std::function<void(size_t done, size_t total)> progress;
};

// Rewrites the GGUF file `in_path` as llama-quantize would with `mix` (an exact name of
// quantize_mix_names()) and writes it to `out_path` as quantize_file does (atomically). The
// report lists each tensor's type, in the file's order. Throws std::invalid_argument for an
// unknown name, a mix that needs an importance matrix, or one whose tensors would need types
// vkllm cannot write yet (named); std::runtime_error for a read or write failure.
QuantizeReport quantize_mix(const std::string& in_path, const std::string& out_path, const std::string& mix,
                            const QuantizeMixOptions& options = {});

// quantize_mix with an importance matrix (vkllm/imatrix.h; llama-imatrix writes one,
// docs/imatrix.md): every weight named in it is encoded with its columns' importance, and the
// mix makes the choices llama-quantize makes when given one (IQ3_XXS attention in IQ3_XXS
// files, ...). Without an imatrix, quantize_mix refuses the mixes whose tensors llama.cpp will not
// write without one (IQ1_S/M, IQ2_XXS/XS/S, IQ3_XXS, Q2_K_S); with one, they are written. The
// file records it as llama-quantize does (quantize.imatrix.file, .dataset, .entries_count,
// .chunks_count). Throws as quantize_mix does, and std::runtime_error for an unreadable imatrix,
// std::invalid_argument for an entry whose size differs from its tensor's.
QuantizeReport quantize_mix_imatrix(const std::string& in_path, const std::string& out_path, const std::string& mix,
                                    const std::string& imatrix_path, const QuantizeMixOptions& options = {});

// Tensors holding NaN or infinite values (vkllm inspect --check): every element of every
// tensor is decoded on the CPU, row by row, and counted.
struct NonFiniteTensor {
    std::string name;
    std::string type;
    uint64_t n_nan = 0, n_inf = 0;
    uint64_t first_index = 0;  // the first bad element, in ggml order (row * row_length + column)
};

struct TensorCheckReport {
    uint64_t tensors_checked = 0;
    uint64_t elements_checked = 0;
    std::vector<NonFiniteTensor> non_finite;  // in file order
    std::vector<std::string> skipped;         // "NAME (TYPE)": types the CPU cannot decode
};

TensorCheckReport check_tensors(const GgufFile& file);

}  // namespace vkllm
