// vkllm::GgufFile: the public, file-level view of a GGUF file (vkllm inspect), the one-line
// rendering of its metadata, and quantize_file (vkllm quantize), written through model/quantized_output.h.
#include <cstdio>
#include <map>
#include <stdexcept>

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "gguf/requantize.h"
#include "model/model_internal.h"
#include "model/quantized_output.h"
#include "vkllm/gguf.h"

namespace vkllm {
namespace {

using gguf::Value;
using gguf::ValueType;

const char* short_type_name(ValueType t) {
    switch (t) {
        case ValueType::UINT8: return "u8";
        case ValueType::INT8: return "i8";
        case ValueType::UINT16: return "u16";
        case ValueType::INT16: return "i16";
        case ValueType::UINT32: return "u32";
        case ValueType::INT32: return "i32";
        case ValueType::UINT64: return "u64";
        case ValueType::INT64: return "i64";
        case ValueType::FLOAT32: return "f32";
        case ValueType::FLOAT64: return "f64";
        case ValueType::BOOL: return "bool";
        case ValueType::STRING: return "string";
        case ValueType::ARRAY: return "array";
    }
    return "?";
}

bool is_signed(ValueType t) {
    return t == ValueType::INT8 || t == ValueType::INT16 || t == ValueType::INT32 || t == ValueType::INT64;
}
bool is_real(ValueType t) { return t == ValueType::FLOAT32 || t == ValueType::FLOAT64; }

std::string scalar_text(const Value& v) {
    char buf[64];
    switch (v.type) {
        case ValueType::STRING: return quoted_one_line(v.s);
        case ValueType::BOOL: return v.u ? "true" : "false";
        case ValueType::FLOAT32:
        case ValueType::FLOAT64: std::snprintf(buf, sizeof buf, "%g", v.f); return buf;
        case ValueType::INT8: case ValueType::INT16: case ValueType::INT32: case ValueType::INT64:
            return std::to_string(v.i);
        default: return std::to_string(v.u);
    }
}

// Scalars in full; short numeric arrays inline; anything longer as "[type x N]" with a preview.
std::string value_text(const Value& v) {
    if (v.type != ValueType::ARRAY) return scalar_text(v);
    std::string kind = std::string("[") + gguf::value_type_name(v.elem_type) + " x " + std::to_string(v.arr.size()) + "]";
    if (v.elem_type == ValueType::ARRAY) return kind;
    const size_t preview = v.elem_type == ValueType::STRING ? 3 : 8;
    if (v.arr.size() <= preview && v.elem_type != ValueType::STRING) {
        std::string r = "[";
        for (size_t i = 0; i < v.arr.size(); ++i) r += (i ? ", " : "") + scalar_text(v.arr[i]);
        return r + "]";
    }
    std::string r = kind + " ";
    for (size_t i = 0; i < v.arr.size() && i < preview; ++i)
        r += (i ? ", " : "") + (v.elem_type == ValueType::STRING ? quoted_one_line(v.arr[i].s, 24) : scalar_text(v.arr[i]));
    if (v.arr.size() > preview) r += ", ...";
    return r;
}

double number_of(const Value& v) {
    if (is_real(v.type)) return v.f;
    if (is_signed(v.type)) return double(v.i);
    return double(v.u);
}

GgufValue public_value(const std::string& key, const Value& v) {
    GgufValue out;
    out.key = key;
    out.type = short_type_name(v.type);
    out.text = value_text(v);
    if (v.type == ValueType::ARRAY) {
        out.elem_type = short_type_name(v.elem_type);
        out.n_elements = v.arr.size();
        if (v.elem_type == ValueType::STRING) {
            out.strings.reserve(v.arr.size());
            for (const Value& e : v.arr) out.strings.push_back(e.s);
        } else if (v.elem_type != ValueType::ARRAY) {
            out.numbers.reserve(v.arr.size());
            for (const Value& e : v.arr) out.numbers.push_back(number_of(e));
        }
    } else if (v.type == ValueType::STRING) {
        out.string = v.s;
    } else if (is_real(v.type)) {
        out.real = v.f;
    } else {
        // Integers and bool; a u64 above INT64_MAX wraps (no model key holds one).
        out.integer = is_signed(v.type) ? v.i : int64_t(v.u);
    }
    return out;
}

TensorInfo public_tensor(const gguf::TensorInfo& t) {
    auto tr = gguf::type_traits(t.type);
    return {t.name, tr ? tr->name : "?", t.dims, t.n_bytes};
}

}  // namespace

std::string quoted_one_line(const std::string& s, size_t max_chars) {
    std::string r = "\"";
    for (size_t i = 0; i < s.size() && i < max_chars; ++i) {
        char c = s[i];
        if (c == '\n') r += "\\n";
        else if (c == '\t') r += "\\t";
        else if (static_cast<unsigned char>(c) < 0x20) r += '?';
        else r += c;
    }
    r += "\"";
    if (s.size() > max_chars) r += " ... (" + std::to_string(s.size()) + " chars)";
    return r;
}

// ---- GgufFile ----

struct GgufFile::Impl {
    std::unique_ptr<gguf::File> file;  // null after release_internal()
    std::string path;
    uint64_t file_size = 0;
    uint32_t version = 0;
    uint64_t alignment = 0;
    std::vector<GgufValue> metadata;
    std::map<std::string, size_t> index;  // key -> position in metadata
    std::vector<TensorInfo> tensors;
};

GgufFile::GgufFile() : impl_(std::make_unique<Impl>()) {}
GgufFile::~GgufFile() = default;

namespace {

// Describes a parsed file in the public types, copying what stays valid after release.
// (A template so it can fill GgufFile's private Impl without naming it.)
template <class Impl>
void describe(Impl& impl, std::unique_ptr<gguf::File> f) {
    impl.path = f->path();
    impl.file_size = f->file_size();
    impl.version = f->version();
    impl.alignment = f->alignment();
    for (const std::string& key : f->keys_in_order()) {
        impl.index[key] = impl.metadata.size();
        impl.metadata.push_back(public_value(key, *f->find(key)));
    }
    for (const gguf::TensorInfo& t : f->tensors()) impl.tensors.push_back(public_tensor(t));
    impl.file = std::move(f);
}

}  // namespace

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
    std::unique_ptr<GgufFile> g(new GgufFile());
    describe(*g->impl_, gguf::File::open(path));
    return g;
}

std::unique_ptr<GgufFile> GgufFile::from_memory(const void* data, size_t size, const std::string& name) {
    std::unique_ptr<GgufFile> g(new GgufFile());
    describe(*g->impl_, gguf::File::from_memory(static_cast<const uint8_t*>(data), size, name));
    return g;
}

const std::string& GgufFile::path() const { return impl_->path; }
uint64_t GgufFile::file_size() const { return impl_->file_size; }
uint32_t GgufFile::version() const { return impl_->version; }
uint64_t GgufFile::alignment() const { return impl_->alignment; }
const std::vector<GgufValue>& GgufFile::metadata() const { return impl_->metadata; }
const std::vector<TensorInfo>& GgufFile::tensors() const { return impl_->tensors; }

const GgufValue* GgufFile::find(const std::string& key) const {
    auto it = impl_->index.find(key);
    return it == impl_->index.end() ? nullptr : &impl_->metadata[it->second];
}

std::unique_ptr<gguf::File> GgufFile::release_internal() {
    if (!impl_->file) throw std::logic_error(impl_->path + ": the GGUF file was already given to a Model");
    return std::move(impl_->file);
}

const gguf::File& GgufFile::internal() const {
    if (!impl_->file) throw std::logic_error(impl_->path + ": the GGUF file was already given to a Model");
    return *impl_->file;
}

// ---- quantize ----

std::vector<std::string> quantize_types() {
    std::vector<std::string> out;
    for (uint32_t n = 0; n < 64; ++n) {
        const auto t = static_cast<gguf::TensorType>(n);
        if (auto tr = gguf::type_traits(t); tr && gguf::can_quantize(t)) out.push_back(tr->name);
    }
    return out;
}

QuantizeReport quantize_file(const GgufFile& in, const std::string& out_path, const std::string& type) {
    return detail::quantize_file(in, out_path, type, nullptr, nullptr);
}

QuantizeReport detail::quantize_file(const GgufFile& in, const std::string& out_path, const std::string& type,
                                     const gguf::KeepSuperWeights* keep, gguf::Requantized* details) {
    auto target = gguf::type_from_name(type);
    if (!target || !gguf::can_quantize(*target)) {
        std::string known;
        for (const std::string& t : quantize_types()) known += " " + t;
        throw std::invalid_argument("unknown or unsupported target type '" + type + "' (known:" + known + ")");
    }
    model::check_quantize_output(in.path(), out_path);

    gguf::Requantized result = gguf::requantize(in.internal(), *target, keep);

    model::write_quantized(result.writer, out_path);

    QuantizeReport report;
    report.bytes_in = result.bytes_in;
    report.bytes_out = result.bytes_out;
    for (const gguf::TensorConversion& c : result.tensors) {
        auto from = gguf::type_traits(c.from), to = gguf::type_traits(c.to);
        report.tensors.push_back({c.name, from ? from->name : "?", to ? to->name : "?", c.note});
    }
    if (details) {
        details->tensors = std::move(result.tensors);
        details->kept = std::move(result.kept);
        details->clipped = result.clipped;
    }
    return report;
}

}  // namespace vkllm
