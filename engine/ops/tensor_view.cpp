#include "ops/tensor_view.h"

#include <string>

#include "ops/dispatch_util.h"

namespace vkllm::ops::detail {

namespace {

std::string type_name(gguf::TensorType t) {
    const auto traits = gguf::type_traits(t);
    return traits ? traits->name : "type " + std::to_string(uint32_t(t));
}

std::string shape(int64_t rows, int64_t cols) { return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]"; }

}  // namespace

uint64_t checked(const TensorView& v, gguf::TensorType type, const char* op, const char* what) {
    const std::string name(what);
    require(v.buffer != nullptr, op, name + " has no buffer");
    require(v.type == type, op, name + " must be " + type_name(type) + ", not " + type_name(v.type));
    require(v.rows >= 0 && v.cols >= 0, op, name + " has a negative shape " + shape(v.rows, v.cols));
    require(v.row_stride >= 0 && v.stride() >= v.cols, op,
            name + "'s row stride " + std::to_string(v.stride()) + " is shorter than its " + std::to_string(v.cols) +
                " columns");
    require(v.offset % 4 == 0, op, name + "'s byte offset " + std::to_string(v.offset) + " is not a whole element");
    if (v.rows > 0 && v.cols > 0) {
        const uint64_t end = v.offset + 4 * (uint64_t(v.rows - 1) * uint64_t(v.stride()) + uint64_t(v.cols));
        require(v.buffer->valid() && end <= v.buffer->size(), op,
                name + " " + shape(v.rows, v.cols) + " needs bytes [" + std::to_string(v.offset) + ", " +
                    std::to_string(end) + ") but its buffer holds " + std::to_string(v.buffer->size()));
    }
    return v.offset / 4;
}

uint64_t checked_f32(const TensorView& v, const char* op, const char* what) {
    return checked(v, gguf::TensorType::F32, op, what);
}

uint64_t checked_vector(const TensorView& v, gguf::TensorType type, int64_t n, const char* op, const char* what) {
    const uint64_t offset = checked(v, type, op, what);
    require_packed(v, op, what);
    require(v.elements() == n, op,
            std::string(what) + " holds " + std::to_string(v.elements()) + " values, expected " + std::to_string(n));
    return offset;
}

void require_shape(const TensorView& v, int64_t rows, int64_t cols, const char* op, const char* what) {
    require(v.rows == rows && v.cols == cols, op,
            std::string(what) + " is " + shape(v.rows, v.cols) + ", expected " + shape(rows, cols));
}

void require_packed(const TensorView& v, const char* op, const char* what) {
    require(v.packed(), op,
            std::string(what) + " must have packed rows (row stride " + std::to_string(v.stride()) + " != " +
                std::to_string(v.cols) + " columns)");
}

void require_same_shape(const TensorView& a, const TensorView& b, const char* op, const char* names, bool stride) {
    require(a.rows == b.rows && a.cols == b.cols, op,
            std::string(names) + " must have one shape, got " + shape(a.rows, a.cols) + " and " + shape(b.rows, b.cols));
    require(!stride || a.stride() == b.stride(), op,
            std::string(names) + " must have one row stride, got " + std::to_string(a.stride()) + " and " +
                std::to_string(b.stride()));
}

void require_kv(const KvView& c, const char* op, const char* what) {
    const std::string name(what);
    require(c.buffer != nullptr && c.buffer->valid(), op, name + " has no buffer");
    require(c.slots > 0 && c.row > 0, op,
            name + " needs positive slots and row, got " + std::to_string(c.slots) + " and " + std::to_string(c.row));
    const uint64_t bytes = cache_bytes(c.type, uint64_t(c.slots) * uint64_t(c.row));
    require(c.buffer->size() >= bytes, op,
            name + "'s " + std::to_string(c.slots) + " slots of " + std::to_string(c.row) + " values need " +
                std::to_string(bytes) + " bytes but its buffer holds " + std::to_string(c.buffer->size()));
}

}  // namespace vkllm::ops::detail
