// GGUF reader: maps the file and validates every field before anything reads through it.
//
// All offsets and sizes from the file are untrusted: each read goes through Cursor, which checks
// the remaining length first, and every product or sum of file-supplied numbers is computed with
// overflow checks. Counts are compared against the bytes left before anything is allocated, so a
// small file cannot ask for a huge allocation.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "gguf/gguf.h"

namespace vkllm::gguf {

namespace {

constexpr uint32_t kMaxArrayDepth = 8;     // arrays of arrays of ... deeper than this are rejected
constexpr uint32_t kMaxDims = 4;           // GGML_MAX_DIMS
constexpr uint64_t kDefaultAlignment = 32;

bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }

// offset + size in decimal, exact even where the sum passes 2^64 (both are 64-bit).
std::string end_text(uint64_t offset, uint64_t size) {
    unsigned __int128 sum = static_cast<unsigned __int128>(offset) + size;
    std::string digits;
    do {
        digits.insert(digits.begin(), char('0' + int(sum % 10)));
        sum /= 10;
    } while (sum != 0);
    return digits;
}

std::string quoted(const std::string& s) {
    // Names come from the file: keep messages printable and short.
    std::string r = "'";
    for (size_t i = 0; i < s.size() && i < 96; ++i) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c < 0x7f) {
            r += static_cast<char>(c);
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            r += buf;
        }
    }
    if (s.size() > 96) r += "...";
    return r + "'";
}

// Bounds-checked little-endian reader over the mapped bytes.
class Cursor {
public:
    Cursor(const uint8_t* base, uint64_t size, const std::string& file) : base_(base), size_(size), file_(file) {}

    uint64_t pos() const { return pos_; }
    uint64_t remaining() const { return size_ - pos_; }

    [[noreturn]] void fail(const std::string& field, const std::string& what) const {
        throw FormatError(file_ + ": " + field + ": " + what);
    }

    void need(uint64_t n, const std::string& field) const {
        if (n > remaining())
            fail(field, "truncated: needs " + std::to_string(n) + " bytes at offset " + std::to_string(pos_) +
                            " but the file ends at " + std::to_string(size_));
    }

    template <typename T>
    T read(const std::string& field) {
        need(sizeof(T), field);
        T v;
        std::memcpy(&v, base_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    std::string read_string(const std::string& field) {
        uint64_t len = read<uint64_t>(field + " (string length)");
        if (len > remaining())
            fail(field, "string length " + std::to_string(len) + " exceeds the " + std::to_string(remaining()) +
                            " bytes left in the file");
        std::string s(reinterpret_cast<const char*>(base_ + pos_), len);
        pos_ += len;
        return s;
    }

private:
    const uint8_t* base_;
    uint64_t size_;
    uint64_t pos_ = 0;
    const std::string& file_;
};

bool valid_value_type(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::FLOAT64); }

// Fewest bytes one element of type `t` can occupy (strings: the length field; arrays: type+count).
uint64_t min_encoded_size(ValueType t) {
    switch (t) {
        case ValueType::UINT8: case ValueType::INT8: case ValueType::BOOL: return 1;
        case ValueType::UINT16: case ValueType::INT16: return 2;
        case ValueType::UINT32: case ValueType::INT32: case ValueType::FLOAT32: return 4;
        case ValueType::UINT64: case ValueType::INT64: case ValueType::FLOAT64: return 8;
        case ValueType::STRING: return 8;
        case ValueType::ARRAY: return 12;
    }
    return 1;
}

Value read_value(Cursor& c, ValueType type, const std::string& field, uint32_t depth) {
    Value v;
    v.type = type;
    switch (type) {
        case ValueType::UINT8: v.u = c.read<uint8_t>(field); break;
        case ValueType::INT8: v.i = c.read<int8_t>(field); break;
        case ValueType::UINT16: v.u = c.read<uint16_t>(field); break;
        case ValueType::INT16: v.i = c.read<int16_t>(field); break;
        case ValueType::UINT32: v.u = c.read<uint32_t>(field); break;
        case ValueType::INT32: v.i = c.read<int32_t>(field); break;
        case ValueType::UINT64: v.u = c.read<uint64_t>(field); break;
        case ValueType::INT64: v.i = c.read<int64_t>(field); break;
        case ValueType::FLOAT32: v.f = c.read<float>(field); break;
        case ValueType::FLOAT64: v.f = c.read<double>(field); break;
        case ValueType::BOOL: {
            uint8_t b = c.read<uint8_t>(field);
            if (b > 1) c.fail(field, "bool value is " + std::to_string(b) + " (must be 0 or 1)");
            v.u = b;
            break;
        }
        case ValueType::STRING: v.s = c.read_string(field); break;
        case ValueType::ARRAY: {
            if (depth >= kMaxArrayDepth)
                c.fail(field, "arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " levels");
            uint32_t et = c.read<uint32_t>(field + " (array element type)");
            if (!valid_value_type(et)) c.fail(field, "unknown array element type " + std::to_string(et));
            v.elem_type = static_cast<ValueType>(et);
            uint64_t n = c.read<uint64_t>(field + " (array length)");
            uint64_t min_bytes;
            if (mul_overflows(n, min_encoded_size(v.elem_type), &min_bytes) || min_bytes > c.remaining())
                c.fail(field, "array of " + std::to_string(n) + " " + value_type_name(v.elem_type) +
                                  " elements cannot fit in the " + std::to_string(c.remaining()) +
                                  " bytes left in the file");
            v.arr.reserve(n);
            for (uint64_t k = 0; k < n; ++k)
                v.arr.push_back(read_value(c, v.elem_type, field + "[" + std::to_string(k) + "]", depth + 1));
            break;
        }
    }
    return v;
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

// ---- File ----

std::unique_ptr<File> File::open(const std::string& path) {
    // O_NONBLOCK: opening a named pipe must not wait for a writer; it is refused below as not a
    // regular file (the flag does not affect reading a regular file through its mapping).
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw std::runtime_error(path + ": cannot open: " + errno_text());
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        std::string err = errno_text();
        ::close(fd);
        throw std::runtime_error(path + ": cannot stat: " + err);
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw std::runtime_error(path + (S_ISDIR(st.st_mode) ? ": is a directory, not a GGUF file"
                                                             : ": not a regular file (a pipe, device or socket)"));
    }
    std::unique_ptr<File> f(new File());
    f->path_ = path;
    f->size_ = static_cast<uint64_t>(st.st_size);
    if (f->size_ > 0) {
        void* m = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            std::string err = errno_text();
            ::close(fd);
            throw std::runtime_error(path + ": cannot map the file into memory: " + err);
        }
        f->mapping_ = m;
        f->base_ = static_cast<const uint8_t*>(m);
    }
    ::close(fd);  // the mapping stays valid
    f->parse();
    return f;
}

std::unique_ptr<File> File::from_memory(const uint8_t* data, size_t size, const std::string& name) {
    std::unique_ptr<File> f(new File());
    f->path_ = name;
    f->owned_.assign(data, data + size);
    f->base_ = f->owned_.data();
    f->size_ = size;
    f->parse();
    return f;
}

File::~File() {
    if (mapping_) ::munmap(mapping_, size_);
}

void File::parse() {
    Cursor c(base_, size_, path_);

    // Header.
    uint32_t magic = c.read<uint32_t>("header (magic)");
    if (std::memcmp(&magic, "GGUF", 4) != 0) {
        char shown[5] = {};
        std::memcpy(shown, &magic, 4);
        for (char& ch : shown)
            if (ch && (ch < 0x20 || ch > 0x7e)) ch = '?';
        c.fail("header (magic)", std::string("not a GGUF file (magic is '") + shown + "', expected 'GGUF')");
    }
    version_ = c.read<uint32_t>("header (version)");
    if (version_ == 1)
        c.fail("header (version)", "GGUF version 1 is not supported (only versions 2 and 3); "
                                   "re-convert the model with a current llama.cpp");
    if (version_ != 2 && version_ != 3) {
        if ((version_ & 0xffff) == 0 && version_ != 0)
            c.fail("header (version)", "the file appears to be big-endian (version field " + std::to_string(version_) +
                                           "); only little-endian GGUF files are supported");
        c.fail("header (version)", "unsupported GGUF version " + std::to_string(version_) + " (supported: 2 and 3)");
    }
    uint64_t n_tensors = c.read<uint64_t>("header (tensor count)");
    uint64_t n_kv = c.read<uint64_t>("header (metadata count)");
    // A key/value pair takes at least 8 (key length) + 4 (type) + 1 bytes.
    if (n_kv > c.remaining() / 13)
        c.fail("header (metadata count)", "claims " + std::to_string(n_kv) + " metadata entries, but only " +
                                              std::to_string(c.remaining()) + " bytes follow (truncated or corrupt file)");
    // A tensor record takes at least 8 (name length) + 4 (n_dims) + 8 (one dim) + 4 (type) + 8 (offset).
    if (n_tensors > c.remaining() / 32)
        c.fail("header (tensor count)", "claims " + std::to_string(n_tensors) + " tensors, but only " +
                                            std::to_string(c.remaining()) + " bytes follow (truncated or corrupt file)");

    // Metadata.
    for (uint64_t k = 0; k < n_kv; ++k) {
        std::string key = c.read_string("metadata key #" + std::to_string(k));
        std::string field = "metadata " + quoted(key);
        if (kv_.count(key)) c.fail(field, "duplicate key");
        uint32_t t = c.read<uint32_t>(field + " (value type)");
        if (!valid_value_type(t)) c.fail(field, "unknown value type " + std::to_string(t));
        Value v = read_value(c, static_cast<ValueType>(t), field, 0);
        kv_.emplace(key, std::move(v));
        key_order_.push_back(key);
    }

    if (const Value* a = find("general.alignment")) {
        if (!a->is_integer()) c.fail("metadata 'general.alignment'", std::string("must be an integer, found a ") + value_type_name(a->type));
        // Read the raw field: any integer type may hold it, including unsigned values above 2^63.
        const bool negative = a->i < 0;
        const uint64_t al = a->u ? a->u : static_cast<uint64_t>(a->i);
        if (negative || al == 0 || (al & (al - 1)) != 0 || al > (uint64_t(1) << 30))
            c.fail("metadata 'general.alignment'", "must be a power of two between 1 and 2^30, found " +
                                                       (negative ? std::to_string(a->i) : std::to_string(al)));
        alignment_ = al;
    } else {
        alignment_ = kDefaultAlignment;
    }

    // Tensor directory.
    tensors_.reserve(n_tensors);
    for (uint64_t k = 0; k < n_tensors; ++k) {
        TensorInfo ti;
        ti.name = c.read_string("tensor #" + std::to_string(k) + " (name)");
        std::string field = "tensor " + quoted(ti.name);
        if (tensor_index_.count(ti.name)) c.fail(field, "duplicate tensor name");
        uint32_t n_dims = c.read<uint32_t>(field + " (n_dims)");
        if (n_dims == 0 || n_dims > kMaxDims)
            c.fail(field, "has " + std::to_string(n_dims) + " dimensions (must be 1 to " + std::to_string(kMaxDims) + ")");
        uint64_t n_elements = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            uint64_t dim = c.read<uint64_t>(field + " (dimension " + std::to_string(d) + ")");
            if (dim == 0) c.fail(field, "dimension " + std::to_string(d) + " is 0");
            if (mul_overflows(n_elements, dim, &n_elements) || n_elements > uint64_t(INT64_MAX))
                c.fail(field, "the product of its dimensions overflows 63 bits");
            ti.dims.push_back(dim);
        }
        uint32_t type = c.read<uint32_t>(field + " (type)");
        ti.type = static_cast<TensorType>(type);
        auto traits = type_traits(ti.type);
        if (!traits) c.fail(field, "unknown tensor type " + std::to_string(type));
        if (ti.dims[0] % traits->block_size != 0)
            c.fail(field, "row length " + std::to_string(ti.dims[0]) + " is not a multiple of the " + traits->name +
                              " block size " + std::to_string(traits->block_size));
        // Bytes: (elements / block) * block bytes. n_elements fits in 63 bits, so the division is exact.
        if (mul_overflows(n_elements / traits->block_size, traits->type_size, &ti.n_bytes))
            c.fail(field, "its size in bytes overflows 64 bits");
        ti.offset = c.read<uint64_t>(field + " (data offset)");
        if (ti.offset % alignment_ != 0)
            c.fail(field, "data offset " + std::to_string(ti.offset) + " is not a multiple of the alignment " +
                              std::to_string(alignment_));
        tensor_index_.emplace(ti.name, tensors_.size());
        tensors_.push_back(std::move(ti));
    }

    // Data blob: starts at the next multiple of the alignment after the directory.
    uint64_t data_start = c.pos();
    if (uint64_t rem = data_start % alignment_; rem != 0) data_start += alignment_ - rem;  // pos < 2^63, align <= 2^30

    // Place each tensor, then check that no two overlap.
    std::vector<std::pair<uint64_t, size_t>> by_offset;  // (begin, tensor index)
    for (size_t k = 0; k < tensors_.size(); ++k) {
        TensorInfo& ti = tensors_[k];
        // Compared without sums that could wrap: offset and size come from the file, so either
        // may be near 2^64; the message gives the numbers as they are.
        const uint64_t data_bytes = size_ > data_start ? size_ - data_start : 0;
        if (ti.offset > data_bytes || ti.n_bytes > data_bytes - ti.offset) {
            std::string where = "data [" + std::to_string(ti.offset) + ".." + end_text(ti.offset, ti.n_bytes) + "]";
            where += ti.offset > data_bytes ? " starts" : " ends";
            c.fail("tensor " + quoted(ti.name),
                   where + " beyond the end of the file: " + std::to_string(ti.n_bytes) + " bytes at offset " +
                       std::to_string(ti.offset) + " of a data section of " + std::to_string(data_bytes) +
                       " bytes (file bytes " + std::to_string(data_start) + ".." + std::to_string(size_) + ")");
        }
        const uint64_t begin = data_start + ti.offset;
        ti.data = base_ + begin;
        by_offset.emplace_back(ti.offset, k);
    }
    std::sort(by_offset.begin(), by_offset.end());
    for (size_t k = 1; k < by_offset.size(); ++k) {
        const TensorInfo& prev = tensors_[by_offset[k - 1].second];
        const TensorInfo& cur = tensors_[by_offset[k].second];
        if (prev.offset + prev.n_bytes > cur.offset)
            c.fail("tensor " + quoted(cur.name), "data at offset " + std::to_string(cur.offset) + " overlaps tensor " +
                                                     quoted(prev.name) + " (offset " + std::to_string(prev.offset) +
                                                     ", " + std::to_string(prev.n_bytes) + " bytes)");
    }
}

const Value* File::find(const std::string& key) const {
    auto it = kv_.find(key);
    return it == kv_.end() ? nullptr : &it->second;
}

const TensorInfo* File::find_tensor(const std::string& name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

// ---- typed getters ----

namespace {
[[noreturn]] void wrong_type(const std::string& file, const std::string& key, const char* want, const Value& v) {
    std::string found = value_type_name(v.type);
    if (v.type == ValueType::ARRAY) found += std::string(" of ") + value_type_name(v.elem_type);
    throw FormatError(file + ": metadata '" + key + "': expected " + want + ", found " + found);
}
bool numeric(ValueType t) {
    return t != ValueType::STRING && t != ValueType::ARRAY && t != ValueType::BOOL;
}
}  // namespace

std::optional<std::string> File::get_string(const std::string& key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != ValueType::STRING) wrong_type(path_, key, "a string", *v);
    return v->s;
}

std::optional<int64_t> File::get_int(const std::string& key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (!numeric(v->type)) wrong_type(path_, key, "an integer", *v);
    try {
        return v->as_int(key);
    } catch (const FormatError& e) {
        throw FormatError(path_ + ": " + e.what());
    }
}

std::optional<double> File::get_float(const std::string& key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (!numeric(v->type)) wrong_type(path_, key, "a number", *v);
    return v->as_float(key);
}

std::optional<bool> File::get_bool(const std::string& key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != ValueType::BOOL) wrong_type(path_, key, "a bool", *v);
    return v->u != 0;
}

std::optional<std::vector<std::string>> File::get_strings(const std::string& key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != ValueType::ARRAY || v->elem_type != ValueType::STRING) wrong_type(path_, key, "an array of strings", *v);
    std::vector<std::string> out;
    out.reserve(v->arr.size());
    for (const Value& e : v->arr) out.push_back(e.s);
    return out;
}

std::optional<std::vector<float>> File::get_floats(const std::string& key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != ValueType::ARRAY || !numeric(v->elem_type)) wrong_type(path_, key, "an array of numbers", *v);
    std::vector<float> out;
    out.reserve(v->arr.size());
    for (const Value& e : v->arr) out.push_back(static_cast<float>(e.as_float(key)));
    return out;
}

std::optional<std::vector<int64_t>> File::get_ints(const std::string& key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != ValueType::ARRAY || !(v->elem_type == ValueType::BOOL || numeric(v->elem_type)))
        wrong_type(path_, key, "an array of integers", *v);
    std::vector<int64_t> out;
    out.reserve(v->arr.size());
    try {
        for (const Value& e : v->arr) out.push_back(e.as_int(key));
    } catch (const FormatError& e) {
        throw FormatError(path_ + ": " + e.what());
    }
    return out;
}

}  // namespace vkllm::gguf
