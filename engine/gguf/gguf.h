// GGUF reader and writer (versions 2 and 3).
// Format: magic "GGUF", u32 version, u64 n_tensors, u64 n_kv, then n_kv key/value pairs,
// then the tensor directory (name, n_dims, dims[], type, offset), then padding to
// `general.alignment` (default 32) and the tensor data blob.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace vkllm::gguf {

// A malformed or unsupported file. The message names the file and the field.
struct FormatError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

enum class ValueType : uint32_t {
    UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
    BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
const char* value_type_name(ValueType t);

// ggml tensor types, numbered as in GGUF.
enum class TensorType : uint32_t {
    F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
    Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
    IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22, IQ4_XS = 23,
    IQ1_M = 29, TQ1_0 = 34, TQ2_0 = 35,  // the i-quants and ternary types
    I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, BF16 = 30, MXFP4 = 39,
};

// Block layout of a tensor type: `block_size` elements take `type_size` bytes.
struct TypeTraits {
    const char* name;
    uint32_t block_size;
    uint32_t type_size;
    bool dequantizable;  // the CPU can turn it into F32
};
// nullopt for a type number GGUF does not define (or we do not know).
std::optional<TypeTraits> type_traits(TensorType t);
std::optional<TensorType> type_from_name(const std::string& name);  // "Q4_K" -> Q4_K

// One metadata value. Arrays hold their elements as Values (nested arrays allowed).
struct Value {
    ValueType type = ValueType::UINT8;
    uint64_t u = 0;      // any unsigned integer type and BOOL
    int64_t i = 0;       // any signed integer type
    double f = 0;        // FLOAT32/FLOAT64
    std::string s;       // STRING
    ValueType elem_type = ValueType::UINT8;  // ARRAY: element type
    std::vector<Value> arr;                  // ARRAY: elements

    bool is_integer() const;
    // Numeric conversions; throw FormatError naming `key` if the value is not numeric.
    int64_t as_int(const std::string& key = "") const;
    double as_float(const std::string& key = "") const;
    static Value from_string(std::string v);
    static Value from_u32(uint32_t v);
    static Value from_i32(int32_t v);
    static Value from_u64(uint64_t v);
    static Value from_f32(float v);
    static Value from_bool(bool v);
    static Value from_strings(const std::vector<std::string>& v);
    static Value from_f32s(const std::vector<float>& v);
    static Value from_i32s(const std::vector<int32_t>& v);
};

struct TensorInfo {
    std::string name;
    TensorType type = TensorType::F32;
    std::vector<uint64_t> dims;  // ggml order: dims[0] is the fastest-varying (row length)
    uint64_t offset = 0;         // from the start of the data blob
    uint64_t n_bytes = 0;
    const uint8_t* data = nullptr;  // into the mapping; valid while the File lives

    uint64_t n_elements() const;
    uint64_t row_length() const { return dims.empty() ? 1 : dims[0]; }
    uint64_t n_rows() const { return row_length() ? n_elements() / row_length() : 0; }
};

// A GGUF file mapped read-only. Everything is validated on open: a returned File never
// reads out of bounds.
class File {
public:
    static std::unique_ptr<File> open(const std::string& path);
    // Parse an in-memory image (copied). `name` is used in error messages.
    static std::unique_ptr<File> from_memory(const uint8_t* data, size_t size, const std::string& name);
    ~File();
    File(const File&) = delete;
    File& operator=(const File&) = delete;

    const std::string& path() const { return path_; }
    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    uint64_t file_size() const { return size_; }

    const std::map<std::string, Value>& metadata() const { return kv_; }
    std::vector<std::string> keys_in_order() const { return key_order_; }
    const Value* find(const std::string& key) const;
    bool has(const std::string& key) const { return find(key) != nullptr; }
    // Typed getters: nullopt when absent; FormatError (naming the key) when of the wrong type.
    std::optional<std::string> get_string(const std::string& key) const;
    std::optional<int64_t> get_int(const std::string& key) const;
    std::optional<double> get_float(const std::string& key) const;
    std::optional<bool> get_bool(const std::string& key) const;
    std::optional<std::vector<std::string>> get_strings(const std::string& key) const;
    std::optional<std::vector<float>> get_floats(const std::string& key) const;
    std::optional<std::vector<int64_t>> get_ints(const std::string& key) const;

    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    const TensorInfo* find_tensor(const std::string& name) const;

private:
    File() = default;
    void parse();
    std::string path_;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    const uint8_t* base_ = nullptr;
    uint64_t size_ = 0;
    void* mapping_ = nullptr;              // mmap'd region (nullptr for memory images)
    std::vector<uint8_t> owned_;           // memory images
    std::map<std::string, Value> kv_;
    std::vector<std::string> key_order_;
    std::vector<TensorInfo> tensors_;
    std::map<std::string, size_t> tensor_index_;
};

// Builds a GGUF v3 file: metadata in insertion order, tensors aligned to `alignment`.
class Writer {
public:
    void set(const std::string& key, Value v);
    // `data` holds the raw bytes in `type`'s layout; dims in ggml order.
    void add_tensor(const std::string& name, TensorType type, std::vector<uint64_t> dims,
                    std::vector<uint8_t> data);
    void add_tensor_f32(const std::string& name, std::vector<uint64_t> dims, const std::vector<float>& values);
    std::vector<uint8_t> to_bytes() const;
    void write(const std::string& path) const;  // throws std::runtime_error on I/O failure

private:
    std::vector<std::pair<std::string, Value>> kv_;
    struct PendingTensor { std::string name; TensorType type; std::vector<uint64_t> dims; std::vector<uint8_t> data; };
    std::vector<PendingTensor> tensors_;
};

}  // namespace vkllm::gguf
