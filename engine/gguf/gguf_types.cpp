// GGUF value and tensor-type tables, and the small Value/TensorInfo helpers.
#include <cmath>
#include <limits>

#include "gguf/gguf.h"

namespace vkllm::gguf {

const char* value_type_name(ValueType t) {
    switch (t) {
        case ValueType::UINT8: return "uint8";
        case ValueType::INT8: return "int8";
        case ValueType::UINT16: return "uint16";
        case ValueType::INT16: return "int16";
        case ValueType::UINT32: return "uint32";
        case ValueType::INT32: return "int32";
        case ValueType::FLOAT32: return "float32";
        case ValueType::BOOL: return "bool";
        case ValueType::STRING: return "string";
        case ValueType::ARRAY: return "array";
        case ValueType::UINT64: return "uint64";
        case ValueType::INT64: return "int64";
        case ValueType::FLOAT64: return "float64";
    }
    return "unknown";
}

namespace {

struct TypeRow {
    uint32_t id;
    TypeTraits traits;
};

// Block sizes and byte sizes as ggml defines them (ggml.c type_traits, ggml-common.h blocks).
// Types the CPU cannot dequantize are still listed so that files holding them can be opened
// and inspected; loading them for inference reports the type by name.
constexpr TypeRow kTypes[] = {
    {0, {"F32", 1, 4, true}},
    {1, {"F16", 1, 2, true}},
    {2, {"Q4_0", 32, 18, true}},
    {3, {"Q4_1", 32, 20, true}},
    {6, {"Q5_0", 32, 22, true}},
    {7, {"Q5_1", 32, 24, true}},
    {8, {"Q8_0", 32, 34, true}},
    {9, {"Q8_1", 32, 36, false}},
    {10, {"Q2_K", 256, 84, true}},
    {11, {"Q3_K", 256, 110, true}},
    {12, {"Q4_K", 256, 144, true}},
    {13, {"Q5_K", 256, 176, true}},
    {14, {"Q6_K", 256, 210, true}},
    {15, {"Q8_K", 256, 292, false}},
    {16, {"IQ2_XXS", 256, 66, true}},
    {17, {"IQ2_XS", 256, 74, true}},
    {18, {"IQ3_XXS", 256, 98, true}},
    {19, {"IQ1_S", 256, 50, true}},
    {20, {"IQ4_NL", 32, 18, true}},
    {21, {"IQ3_S", 256, 110, true}},
    {22, {"IQ2_S", 256, 82, true}},
    {23, {"IQ4_XS", 256, 136, true}},
    {24, {"I8", 1, 1, false}},
    {25, {"I16", 1, 2, false}},
    {26, {"I32", 1, 4, false}},
    {27, {"I64", 1, 8, false}},
    {28, {"F64", 1, 8, false}},
    {29, {"IQ1_M", 256, 56, true}},
    {30, {"BF16", 1, 2, true}},
    {34, {"TQ1_0", 256, 54, true}},
    {35, {"TQ2_0", 256, 66, true}},
    {39, {"MXFP4", 32, 17, true}},
};

}  // namespace

std::optional<TypeTraits> type_traits(TensorType t) {
    for (const auto& row : kTypes)
        if (row.id == static_cast<uint32_t>(t)) return row.traits;
    return std::nullopt;
}

std::optional<TensorType> type_from_name(const std::string& name) {
    std::string upper;
    for (char c : name) upper += (c >= 'a' && c <= 'z') ? char(c - 'a' + 'A') : c;
    for (const auto& row : kTypes)
        if (upper == row.traits.name) return static_cast<TensorType>(row.id);
    return std::nullopt;
}

// ---- Value ----

static bool is_unsigned(ValueType t) {
    return t == ValueType::UINT8 || t == ValueType::UINT16 || t == ValueType::UINT32 || t == ValueType::UINT64;
}
static bool is_signed(ValueType t) {
    return t == ValueType::INT8 || t == ValueType::INT16 || t == ValueType::INT32 || t == ValueType::INT64;
}

bool Value::is_integer() const { return is_unsigned(type) || is_signed(type); }

static std::string key_prefix(const std::string& key) {
    return key.empty() ? std::string("metadata value") : "metadata '" + key + "'";
}

int64_t Value::as_int(const std::string& key) const {
    if (is_signed(type)) return i;
    if (is_unsigned(type) || type == ValueType::BOOL) {
        if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            throw FormatError(key_prefix(key) + ": value " + std::to_string(u) + " does not fit in a signed 64-bit integer");
        return static_cast<int64_t>(u);
    }
    if (type == ValueType::FLOAT32 || type == ValueType::FLOAT64) {
        // Some converters store integral hyperparameters as floats; accept exact integers only.
        if (std::isfinite(f) && f == std::floor(f) && std::fabs(f) < 9.0e15) return static_cast<int64_t>(f);
        throw FormatError(key_prefix(key) + ": expected an integer, found the float " + std::to_string(f));
    }
    throw FormatError(key_prefix(key) + ": expected an integer, found a " + value_type_name(type));
}

double Value::as_float(const std::string& key) const {
    if (type == ValueType::FLOAT32 || type == ValueType::FLOAT64) return f;
    if (is_signed(type)) return static_cast<double>(i);
    if (is_unsigned(type)) return static_cast<double>(u);
    throw FormatError(key_prefix(key) + ": expected a number, found a " + value_type_name(type));
}

Value Value::from_string(std::string v) {
    Value r;
    r.type = ValueType::STRING;
    r.s = std::move(v);
    return r;
}
Value Value::from_u32(uint32_t v) {
    Value r;
    r.type = ValueType::UINT32;
    r.u = v;
    return r;
}
Value Value::from_i32(int32_t v) {
    Value r;
    r.type = ValueType::INT32;
    r.i = v;
    return r;
}
Value Value::from_u64(uint64_t v) {
    Value r;
    r.type = ValueType::UINT64;
    r.u = v;
    return r;
}
Value Value::from_f32(float v) {
    Value r;
    r.type = ValueType::FLOAT32;
    r.f = v;
    return r;
}
Value Value::from_bool(bool v) {
    Value r;
    r.type = ValueType::BOOL;
    r.u = v ? 1 : 0;
    return r;
}
Value Value::from_strings(const std::vector<std::string>& v) {
    Value r;
    r.type = ValueType::ARRAY;
    r.elem_type = ValueType::STRING;
    r.arr.reserve(v.size());
    for (const auto& s : v) r.arr.push_back(from_string(s));
    return r;
}
Value Value::from_f32s(const std::vector<float>& v) {
    Value r;
    r.type = ValueType::ARRAY;
    r.elem_type = ValueType::FLOAT32;
    r.arr.reserve(v.size());
    for (float x : v) r.arr.push_back(from_f32(x));
    return r;
}
Value Value::from_i32s(const std::vector<int32_t>& v) {
    Value r;
    r.type = ValueType::ARRAY;
    r.elem_type = ValueType::INT32;
    r.arr.reserve(v.size());
    for (int32_t x : v) r.arr.push_back(from_i32(x));
    return r;
}

uint64_t TensorInfo::n_elements() const {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;  // the reader has checked that this cannot overflow
    return n;
}

}  // namespace vkllm::gguf
