// libFuzzer target: File::from_memory on arbitrary bytes.
//
// Properties checked, beyond "no crash, no sanitizer report":
// - a malformed input throws FormatError (any other exception type aborts the run);
// - a file that opens can be read through completely: every getter, every tensor decoded
//   (ASan sees any read past the image, which from_memory holds in an exact-size buffer);
// - writing the parsed contents back with Writer and parsing again gives the same metadata
//   and the same tensor bytes.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gguf/gguf.h"
#include "gguf/quant.h"

using namespace vkllm::gguf;

namespace {

void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "fuzz_gguf: property violated: %s\n", what);
        std::abort();
    }
}

bool same_value(const Value& a, const Value& b) {
    if (a.type != b.type) return false;
    switch (a.type) {
        case ValueType::FLOAT32:
        case ValueType::FLOAT64:
            return (std::isnan(a.f) && std::isnan(b.f)) || a.f == b.f;
        case ValueType::STRING: return a.s == b.s;
        case ValueType::ARRAY:
            if (a.elem_type != b.elem_type || a.arr.size() != b.arr.size()) return false;
            for (size_t i = 0; i < a.arr.size(); ++i)
                if (!same_value(a.arr[i], b.arr[i])) return false;
            return true;
        default: return a.u == b.u && a.i == b.i;
    }
}

// Reads everything a consumer might read.
void exercise(const File& f) {
    for (const std::string& key : f.keys_in_order()) {
        const Value* v = f.find(key);
        check(v != nullptr, "listed key is findable");
        // The getters either answer or throw FormatError for a type mismatch.
        try { (void)f.get_string(key); } catch (const FormatError&) {}
        try { (void)f.get_int(key); } catch (const FormatError&) {}
        try { (void)f.get_float(key); } catch (const FormatError&) {}
        try { (void)f.get_bool(key); } catch (const FormatError&) {}
        try { (void)f.get_strings(key); } catch (const FormatError&) {}
        try { (void)f.get_floats(key); } catch (const FormatError&) {}
        try { (void)f.get_ints(key); } catch (const FormatError&) {}
    }
    for (const TensorInfo& t : f.tensors()) {
        check(f.find_tensor(t.name) == &t, "tensor index");
        check(t.offset % f.alignment() == 0, "tensor offset aligned");
        check(t.data != nullptr && t.n_bytes <= f.file_size(), "tensor size within file");
        auto traits = type_traits(t.type);
        check(traits.has_value(), "tensor type known");
        check(row_size(t.type, t.row_length()) * t.n_rows() == t.n_bytes, "tensor byte size");
        // Touch every byte; decode when the CPU can and the tensor is small enough to be quick.
        unsigned sum = 0;
        for (uint64_t i = 0; i < t.n_bytes; ++i) sum += t.data[i];
        (void)sum;
        if (traits->dequantizable && t.n_elements() <= (1u << 16)) (void)dequantize_tensor(t);
    }
}

void rewrite_and_compare(const File& f) {
    Writer w;
    for (const std::string& key : f.keys_in_order()) w.set(key, *f.find(key));
    for (const TensorInfo& t : f.tensors())
        w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    std::vector<uint8_t> bytes = w.to_bytes();
    auto g = File::from_memory(bytes.data(), bytes.size(), "rewritten.gguf");
    check(g->keys_in_order() == f.keys_in_order(), "rewrite keeps keys in order");
    for (const std::string& key : f.keys_in_order()) check(same_value(*f.find(key), *g->find(key)), "rewrite keeps values");
    check(g->tensors().size() == f.tensors().size(), "rewrite keeps tensors");
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        const TensorInfo& a = f.tensors()[i];
        const TensorInfo& b = g->tensors()[i];
        check(a.name == b.name && a.type == b.type && a.dims == b.dims && a.n_bytes == b.n_bytes, "rewrite keeps tensor records");
        check(std::memcmp(a.data, b.data, a.n_bytes) == 0, "rewrite keeps tensor bytes");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::unique_ptr<File> f;
    try {
        f = File::from_memory(data, size, "fuzz.gguf");
    } catch (const FormatError& e) {
        check(std::strncmp(e.what(), "fuzz.gguf: ", 11) == 0, "error names the file");
        return 0;
    }
    exercise(*f);
    rewrite_and_compare(*f);
    return 0;
}
