// GGUF v3 writer: header, metadata in insertion order, tensor directory, aligned data blob.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "gguf/gguf.h"

namespace vkllm::gguf {

namespace {

class ByteSink {
public:
    explicit ByteSink(std::vector<uint8_t>& out) : out_(out) {}
    template <typename T>
    void put(T v) {
        uint8_t b[sizeof(T)];
        std::memcpy(b, &v, sizeof(T));
        out_.insert(out_.end(), b, b + sizeof(T));
    }
    void put_string(const std::string& s) {
        put<uint64_t>(s.size());
        out_.insert(out_.end(), s.begin(), s.end());
    }
    void pad_to(uint64_t alignment) {
        while (out_.size() % alignment) out_.push_back(0);
    }

private:
    std::vector<uint8_t>& out_;
};

void put_value(ByteSink& w, const Value& v, const std::string& key) {
    switch (v.type) {
        case ValueType::UINT8: w.put<uint8_t>(static_cast<uint8_t>(v.u)); break;
        case ValueType::INT8: w.put<int8_t>(static_cast<int8_t>(v.i)); break;
        case ValueType::UINT16: w.put<uint16_t>(static_cast<uint16_t>(v.u)); break;
        case ValueType::INT16: w.put<int16_t>(static_cast<int16_t>(v.i)); break;
        case ValueType::UINT32: w.put<uint32_t>(static_cast<uint32_t>(v.u)); break;
        case ValueType::INT32: w.put<int32_t>(static_cast<int32_t>(v.i)); break;
        case ValueType::UINT64: w.put<uint64_t>(v.u); break;
        case ValueType::INT64: w.put<int64_t>(v.i); break;
        case ValueType::FLOAT32: w.put<float>(static_cast<float>(v.f)); break;
        case ValueType::FLOAT64: w.put<double>(v.f); break;
        case ValueType::BOOL: w.put<uint8_t>(v.u ? 1 : 0); break;
        case ValueType::STRING: w.put_string(v.s); break;
        case ValueType::ARRAY:
            w.put<uint32_t>(static_cast<uint32_t>(v.elem_type));
            w.put<uint64_t>(v.arr.size());
            for (const Value& e : v.arr) {
                if (e.type != v.elem_type)
                    throw std::runtime_error("gguf writer: metadata '" + key + "': array of " +
                                             value_type_name(v.elem_type) + " holds a " + value_type_name(e.type));
                put_value(w, e, key);
            }
            break;
        default:
            throw std::runtime_error("gguf writer: metadata '" + key + "': invalid value type " +
                                     std::to_string(static_cast<uint32_t>(v.type)));
    }
}

uint64_t writer_alignment(const std::vector<std::pair<std::string, Value>>& kv) {
    for (const auto& [key, v] : kv) {
        if (key != "general.alignment") continue;
        int64_t a = v.is_integer() ? v.as_int(key) : 0;
        if (a <= 0 || (a & (a - 1)) != 0 || a > (int64_t(1) << 30))
            throw std::runtime_error("gguf writer: general.alignment must be a power-of-two integer");
        return static_cast<uint64_t>(a);
    }
    return 32;
}

}  // namespace

void Writer::set(const std::string& key, Value v) {
    for (auto& [k, old] : kv_)
        if (k == key) {
            old = std::move(v);
            return;
        }
    kv_.emplace_back(key, std::move(v));
}

void Writer::add_tensor(const std::string& name, TensorType type, std::vector<uint64_t> dims, std::vector<uint8_t> data) {
    auto traits = type_traits(type);
    if (!traits) throw std::runtime_error("gguf writer: tensor '" + name + "': unknown type " + std::to_string(static_cast<uint32_t>(type)));
    if (dims.empty() || dims.size() > 4) throw std::runtime_error("gguf writer: tensor '" + name + "': needs 1 to 4 dimensions");
    uint64_t n = 1;
    for (uint64_t d : dims) {
        if (d == 0 || __builtin_mul_overflow(n, d, &n)) throw std::runtime_error("gguf writer: tensor '" + name + "': bad dimensions");
    }
    if (dims[0] % traits->block_size)
        throw std::runtime_error("gguf writer: tensor '" + name + "': row length " + std::to_string(dims[0]) +
                                 " is not a multiple of the " + traits->name + " block size " +
                                 std::to_string(traits->block_size));
    uint64_t expected = n / traits->block_size * traits->type_size;
    if (data.size() != expected)
        throw std::runtime_error("gguf writer: tensor '" + name + "': " + std::to_string(data.size()) + " bytes given, " +
                                 traits->name + " with these dimensions takes " + std::to_string(expected));
    for (const auto& t : tensors_)
        if (t.name == name) throw std::runtime_error("gguf writer: duplicate tensor '" + name + "'");
    tensors_.push_back({name, type, std::move(dims), std::move(data)});
}

void Writer::add_tensor_f32(const std::string& name, std::vector<uint64_t> dims, const std::vector<float>& values) {
    std::vector<uint8_t> bytes(values.size() * sizeof(float));
    if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
    add_tensor(name, TensorType::F32, std::move(dims), std::move(bytes));
}

// Everything before the data blob, padded to the alignment. A template so that it can take the
// private PendingTensor list.
template <typename Tensors>
static std::vector<uint8_t> header_and_directory(const std::vector<std::pair<std::string, Value>>& kv,
                                                 const Tensors& tensors, uint64_t alignment) {
    std::vector<uint8_t> out;
    ByteSink w(out);
    uint32_t magic;
    std::memcpy(&magic, "GGUF", 4);
    w.put<uint32_t>(magic);
    w.put<uint32_t>(3);
    w.put<uint64_t>(tensors.size());
    w.put<uint64_t>(kv.size());
    for (const auto& [key, v] : kv) {
        w.put_string(key);
        w.put<uint32_t>(static_cast<uint32_t>(v.type));
        put_value(w, v, key);
    }
    uint64_t offset = 0;  // from the start of the data blob
    for (const auto& t : tensors) {
        w.put_string(t.name);
        w.put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
        for (uint64_t d : t.dims) w.put<uint64_t>(d);
        w.put<uint32_t>(static_cast<uint32_t>(t.type));
        w.put<uint64_t>(offset);
        offset += (t.data.size() + alignment - 1) / alignment * alignment;
    }
    w.pad_to(alignment);
    return out;
}

std::vector<uint8_t> Writer::to_bytes() const {
    const uint64_t alignment = writer_alignment(kv_);
    std::vector<uint8_t> out = header_and_directory(kv_, tensors_, alignment);
    ByteSink w(out);
    for (const auto& t : tensors_) {
        out.insert(out.end(), t.data.begin(), t.data.end());
        w.pad_to(alignment);
    }
    return out;
}

void Writer::write(const std::string& path) const {
    // Streams the tensors instead of building the whole image: model files can be large.
    const uint64_t alignment = writer_alignment(kv_);
    std::vector<uint8_t> head = header_and_directory(kv_, tensors_, alignment);
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) throw std::runtime_error(path + ": cannot create: " + std::strerror(errno));
    static const uint8_t zeros[1024] = {};
    bool ok = std::fwrite(head.data(), 1, head.size(), f) == head.size();
    for (const auto& t : tensors_) {
        if (!ok) break;
        ok = std::fwrite(t.data.data(), 1, t.data.size(), f) == t.data.size();
        for (uint64_t pad = (alignment - t.data.size() % alignment) % alignment; ok && pad > 0;) {
            size_t chunk = pad < sizeof zeros ? pad : sizeof zeros;
            ok = std::fwrite(zeros, 1, chunk, f) == chunk;
            pad -= chunk;
        }
    }
    int saved = errno;
    ok = (std::fclose(f) == 0) && ok;
    if (!ok) throw std::runtime_error(path + ": write failed: " + std::strerror(saved ? saved : errno));
}

}  // namespace vkllm::gguf
